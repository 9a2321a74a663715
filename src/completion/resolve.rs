//! Which completion model a job gets on its backend: the one it named, or
//! the backend's default, refused with a reason where the backend cannot do
//! what the model needs ([`Needs`], one per model).

use super::needs;
use crate::device::Caps;
use crate::job::CompletionModel;

/// What a completion model needs of its backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// A backend that performs each I/O inside the submitting call.
    Synchronous,
    /// An asynchronous backend that can sleep for completions.
    Sleep,
    /// An asynchronous backend whose completion queue can be peeked (polled).
    Peek,
    /// An asynchronous backend that can both sleep and be polled.
    SleepAndPeek,
}

/// Why a completion model cannot serve a job on its backend. Each message
/// names the model that would work instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompletionError {
    #[error(
        "backend {backend} completes I/O asynchronously; completion=sync needs a synchronous backend (sync, psync, vsync, pvsync, pvsync2)"
    )]
    SyncOnAsync { backend: String },
    #[error(
        "backend {backend} performs each I/O inside the submitting call, so there is no completion to {verb} for; use completion=sync (or ioengine=io_uring / libaio / null)"
    )]
    NothingToWaitFor { backend: String, verb: &'static str },
    #[error("backend {backend} cannot sleep for completions; {instead}")]
    CannotSleep {
        backend: String,
        instead: &'static str,
    },
    #[error("backend {backend} cannot be polled; {instead}")]
    CannotPoll {
        backend: String,
        instead: &'static str,
    },
    #[error(
        "completion={model} needs a backend that can both sleep and poll; {backend} cannot: {instead}"
    )]
    NeedsSleepAndPoll {
        model: &'static str,
        backend: String,
        instead: &'static str,
    },
}

/// What to ask for instead when a backend lacks sleeping, polling or both. The
/// one backend here that polls but cannot sleep is io_uring with IOPOLL (hipri=1).
fn instead(caps: Caps) -> &'static str {
    match (caps.can_sleep, caps.can_peek) {
        (true, _) => {
            "use completion=interrupt, or ioengine=io_uring / libaio / null, which can poll"
        }
        (false, true) => "use completion=poll, or drop hipri=1 so the ring can sleep",
        (false, false) => "use ioengine=io_uring / libaio / null, which can both sleep and poll",
    }
}

/// Pick the model a job gets when it names none, and refuse impossible pairs.
pub fn resolve(
    asked: Option<CompletionModel>,
    caps: Caps,
    backend: &str,
) -> Result<CompletionModel, CompletionError> {
    let model = match asked {
        Some(m) => m,
        None if caps.sync => CompletionModel::Sync,
        None => CompletionModel::Interrupt,
    };
    let backend = backend.to_string();
    let needs = needs(model);
    match needs {
        Needs::Synchronous if !caps.sync => Err(CompletionError::SyncOnAsync { backend }),
        Needs::Synchronous => Ok(model),
        _ if caps.sync => Err(CompletionError::NothingToWaitFor {
            backend,
            verb: match needs {
                Needs::Sleep => "sleep",
                _ => "poll",
            },
        }),
        Needs::Sleep if !caps.can_sleep => Err(CompletionError::CannotSleep {
            backend,
            instead: instead(caps),
        }),
        Needs::Peek if !caps.can_peek => Err(CompletionError::CannotPoll {
            backend,
            instead: instead(caps),
        }),
        Needs::SleepAndPeek if !(caps.can_peek && caps.can_sleep) => {
            Err(CompletionError::NeedsSleepAndPoll {
                model: model.name(),
                backend,
                instead: instead(caps),
            })
        }
        _ => Ok(model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::engine::Engine;

    const ASYNC: Caps = Caps {
        sync: false,
        can_peek: true,
        can_sleep: true,
        device_poll: false,
        predicts_completion: false,
        inline: false,
    };
    const PSYNC: &str = Engine::Psync.fio_name();
    const IO_URING: &str = Engine::IoUring.fio_name();

    const SYNC: Caps = Caps {
        sync: true,
        can_peek: false,
        can_sleep: false,
        device_poll: false,
        predicts_completion: false,
        inline: false,
    };

    #[test]
    fn defaults_follow_the_backend() {
        assert_eq!(resolve(None, SYNC, PSYNC), Ok(CompletionModel::Sync));
        assert_eq!(
            resolve(None, ASYNC, IO_URING),
            Ok(CompletionModel::Interrupt)
        );
    }

    #[test]
    fn impossible_pairs_are_refused_with_reason() {
        let e = resolve(Some(CompletionModel::Poll), SYNC, PSYNC)
            .unwrap_err()
            .to_string();
        assert!(e.contains(PSYNC) && e.contains("completion=sync"), "{e}");
        let e = resolve(Some(CompletionModel::Sync), ASYNC, IO_URING)
            .unwrap_err()
            .to_string();
        assert!(e.contains("asynchronously"), "{e}");
        let no_sleep = Caps {
            can_sleep: false,
            ..ASYNC
        };
        assert!(resolve(Some(CompletionModel::Hybrid), no_sleep, "x").is_err());
        assert!(resolve(Some(CompletionModel::Poll), no_sleep, "x").is_ok());
    }

    #[test]
    fn policies_are_refused_where_they_cannot_sleep_and_poll() {
        for m in [
            CompletionModel::HybridUring,
            CompletionModel::Pas,
            CompletionModel::Dpas,
        ] {
            assert_eq!(resolve(Some(m), ASYNC, "null"), Ok(m));
            let e = resolve(Some(m), SYNC, PSYNC).unwrap_err().to_string();
            assert!(e.contains("completion=sync"), "{e}");
            let no_sleep = Caps {
                can_sleep: false,
                ..ASYNC
            };
            let e = resolve(Some(m), no_sleep, "x").unwrap_err().to_string();
            assert!(e.contains(m.name()), "{e}");
        }
    }

    #[test]
    fn each_model_is_refused_exactly_where_its_needs_are_not_met() {
        let all = [
            CompletionModel::Sync,
            CompletionModel::Interrupt,
            CompletionModel::Poll,
            CompletionModel::Hybrid,
            CompletionModel::HybridUring,
            CompletionModel::Pas,
            CompletionModel::Dpas,
            CompletionModel::Adaptive,
        ];
        for m in all {
            for (sync, can_peek, can_sleep) in [
                (true, false, false),
                (false, true, true),
                (false, true, false),
                (false, false, true),
                (false, false, false),
            ] {
                let caps = Caps {
                    sync,
                    can_peek,
                    can_sleep,
                    ..ASYNC
                };
                let ok = match m {
                    CompletionModel::Sync => sync,
                    CompletionModel::Interrupt => !sync && can_sleep,
                    CompletionModel::Poll => !sync && can_peek,
                    _ => !sync && can_peek && can_sleep,
                };
                assert_eq!(resolve(Some(m), caps, "x").is_ok(), ok, "{m:?} on {caps:?}");
            }
        }
    }
}
