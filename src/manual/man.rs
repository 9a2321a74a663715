//! Man pages in roff: iolab(1) and one page per command (iolab-run(1), ...),
//! rendered by clap_mangen from the clap definition, plus the sections clap
//! does not know: iolab(1)'s environment and exit statuses, and iolab-run(1)'s
//! reference of every job option from the option table, as fio(1) lists its
//! own.

use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};

use super::{ENVIRONMENT, EXIT_STATUS, one_line};
use crate::job::table::{Arity, OPTIONS, Section, Status};

/// One man page: its file name (`iolab-run.1`) and its roff text.
pub struct Page {
    pub file: String,
    pub roff: String,
}

/// Every page: iolab(1) first, then each command that is not hidden, in the
/// order `iolab --help` lists them.
pub fn pages(cli: clap::Command) -> Vec<Page> {
    let mut cli = cli.disable_help_subcommand(true);
    // Building fills in what the pages print: `iolab-run` as a command's page
    // name, `iolab run` in its synopsis.
    cli.build();
    let mut out = vec![page(&cli, None)];
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        // Every page says which iolab it describes (clap gives only the top
        // command a version).
        let sub = sub.clone().version(env!("CARGO_PKG_VERSION"));
        out.push(page(&sub, Some(&cli)));
    }
    out
}

fn page(cmd: &clap::Command, parent: Option<&clap::Command>) -> Page {
    let man = Man::new(cmd.clone()).manual("iolab manual");
    let file = man.get_filename();
    let mut w = Vec::new();
    let render = |r: std::io::Result<()>| r.expect("rendering into memory does not fail");
    render(man.render_title(&mut w));
    render(man.render_name_section(&mut w));
    render(man.render_synopsis_section(&mut w));
    render(man.render_description_section(&mut w));
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        render(man.render_options_section(&mut w));
    }
    let mut extra = Roff::new();
    match parent {
        None => {
            render(man.render_subcommands_section(&mut w));
            environment(&mut extra);
            exit_status(&mut extra);
        }
        Some(_) => {
            if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
                extra.control("SH", ["NOTES"]);
                paragraphs(&mut extra, &after.to_string());
            }
            if cmd.get_name() == "run" {
                job_options(&mut extra);
            }
            extra.control("SH", ["EXIT STATUS"]);
            extra.text([
                roman("As for every iolab command: see "),
                bold("iolab"),
                roman("(1)."),
            ]);
        }
    }
    see_also(&mut extra, cmd, parent);
    render(extra.to_writer(&mut w));
    render(man.render_version_section(&mut w));
    Page {
        file,
        roff: String::from_utf8(w).expect("roff is UTF-8"),
    }
}

/// Text with blank-line paragraphs and indented example lines kept apart.
fn paragraphs(r: &mut Roff, text: &str) {
    for para in text.split("\n\n") {
        r.control("PP", []);
        let lines: Vec<&str> = para.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.starts_with("  ") {
                // An example command: verbatim, one per line.
                r.control("nf", [])
                    .text([roman(line.trim_end())])
                    .control("fi", []);
            } else if i + 1 < lines.len() && !lines[i + 1].starts_with("  ") {
                r.text([roman(format!("{line} "))]);
            } else {
                r.text([roman(*line)]);
            }
        }
    }
}

fn environment(r: &mut Roff) {
    r.control("SH", ["ENVIRONMENT"]);
    for e in ENVIRONMENT {
        r.control("TP", []).text([bold(e.name)]);
        r.text([roman(one_line(e.meaning))]);
    }
}

fn exit_status(r: &mut Roff) {
    r.control("SH", ["EXIT STATUS"]);
    for e in EXIT_STATUS {
        r.control("TP", []).text([bold(e.code)]);
        r.text([roman(one_line(e.meaning))]);
    }
}

fn see_also(r: &mut Roff, cmd: &clap::Command, parent: Option<&clap::Command>) {
    r.control("SH", ["SEE ALSO"]);
    let mut refs: Vec<String> = match parent {
        None => cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| format!("iolab-{}", s.get_name()))
            .collect(),
        Some(_) => vec!["iolab".to_string()],
    };
    refs.extend(["fio".to_string(), "strace".to_string()]);
    let mut inlines = Vec::new();
    for (i, name) in refs.iter().enumerate() {
        let sep = if i + 1 < refs.len() { "(1), " } else { "(1)" };
        inlines.push(bold(name.as_str()));
        inlines.push(roman(sep));
    }
    r.text(inlines);
    r.control("PP", []).text([
        roman("The full documentation, with the studies and the fio comparison: "),
        italic("/usr/share/doc/iolab/"),
        roman(" (README.md, docs/) and example job files in "),
        italic("/usr/share/doc/iolab/examples/"),
        roman("."),
    ]);
}

/// iolab-run(1)'s reference of every job option, grouped by the sections of
/// fio's HOWTO, as fio(1) lists fio's: name and aliases, what it does here,
/// how it differs from fio's, what a value looks like.
fn job_options(r: &mut Roff) {
    r.control("SH", ["JOB OPTIONS"]);
    r.text([roman(
        "Written --name=value on the command line or name=value in a job file. \
         Options marked refused are fio's and are not run by iolab; the reason says what to \
         do instead. \"iolab run --cmdhelp=NAME\" prints one entry.",
    )]);
    for sec in Section::ALL {
        let opts: Vec<_> = OPTIONS.iter().filter(|o| o.section == sec).collect();
        if opts.is_empty() {
            continue;
        }
        r.control("SS", [sec.title()]);
        for o in opts {
            let mut head = vec![bold(o.name)];
            if !o.aliases.is_empty() {
                head.push(roman(format!(" (alias: {})", o.aliases.join(", "))));
            }
            r.control("TP", []).text(head);
            match o.status {
                Status::Refused(why) => {
                    r.text([italic("Refused: "), roman(why)]);
                    continue;
                }
                Status::Same => r.text([roman(o.help)]),
                Status::IolabOnly => r.text([roman(format!("{} (iolab's own.)", o.help))]),
                Status::Stricter(why) => r.text([
                    roman(format!("{}. ", o.help)),
                    italic("Stricter: "),
                    roman(why),
                ]),
                Status::Noted(note) => r.text([
                    roman(format!("{}. ", o.help)),
                    italic("Note: "),
                    roman(note),
                ]),
            };
            if o.has_setter() {
                let alone = match o.arity {
                    Arity::Value => "",
                    Arity::Flag => "",
                    Arity::Bare => "; or the name alone",
                };
                r.control("br", [])
                    .text([italic("Value: "), roman(format!("{}{alone}", o.expected))]);
            }
        }
    }
}
