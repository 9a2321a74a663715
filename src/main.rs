//! The `iolab` command: everything is in the library's command-line module;
//! this binary only enters it.

fn main() -> std::process::ExitCode {
    iolab::command_line()
}
