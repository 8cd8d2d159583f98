//! A small POSIX-sh-like interpreter for the command lines that arrive over `shell:`/`exec:`.
//!
//! Why not just split on spaces: clients quote arguments (`input text 'hello world'`), append
//! exit-code markers (`cmd; echo MARKER$?`), pipe into `grep`, and redirect stderr
//! (`2>/dev/null`). The real device runs all of that through mksh, so the sim must understand the
//! same syntax to exercise the client's quoting for real. Supported: `'…'`, `"…"` (with `\`
//! escapes for `$ \` " \`), backslash, `$?`/`$VAR`/`${VAR}`, `;` `&&` `||` `|` `&` (run in the
//! foreground), newlines, `#` comments, and redirections `>`, `>>`, `2>`, `2>&1`, `1>&2`, `<`.
//! Command substitution, globbing and control flow are intentionally unsupported.

use std::time::Duration;

use super::cmdio::{CmdIo, ExecResult};
use super::device::{now_unix_secs, Device};

/// Part of a word; `$?` must be expanded when the command *runs*, not when it is parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    Lit(String),
    Status,
    Var(String),
}

pub type Word = Vec<Seg>;

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Word(Word),
    Semi,
    And,
    Or,
    Pipe,
    /// `N>` / `N>>` with the target word following.
    RedirOut {
        fd: u32,
        append: bool,
    },
    /// `N>&M`.
    Dup {
        fd: u32,
        to: u32,
    },
    RedirIn,
}

/// Splits a command line into tokens (quote removal happens here, expansion later).
pub fn tokenize(src: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut word: Word = Vec::new();
    let mut in_word = false;
    let mut i = 0;
    fn push_lit(word: &mut Word, c: char) {
        if let Some(Seg::Lit(s)) = word.last_mut() {
            s.push(c);
        } else {
            word.push(Seg::Lit(c.to_string()));
        }
    }
    fn end_word(toks: &mut Vec<Token>, word: &mut Word, in_word: &mut bool) {
        if *in_word {
            toks.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    }
    // Parses `$...` at chars[i] (which is '$'); returns the new index.
    fn dollar(chars: &[char], mut i: usize, word: &mut Word) -> usize {
        i += 1;
        match chars.get(i) {
            Some('?') => {
                word.push(Seg::Status);
                i + 1
            }
            Some('$') => {
                word.push(Seg::Var("$".into()));
                i + 1
            }
            Some('{') => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j] != '}' {
                    j += 1;
                }
                let name: String = chars[start..j.min(chars.len())].iter().collect();
                word.push(if name == "?" { Seg::Status } else { Seg::Var(name) });
                (j + 1).min(chars.len())
            }
            Some(c) if c.is_ascii_alphanumeric() || *c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                word.push(Seg::Var(chars[start..i].iter().collect()));
                i
            }
            _ => {
                push_lit(word, '$');
                i
            }
        }
    }
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => {
                end_word(&mut toks, &mut word, &mut in_word);
                i += 1;
            }
            '\n' | ';' => {
                end_word(&mut toks, &mut word, &mut in_word);
                toks.push(Token::Semi);
                i += 1;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '&' => {
                end_word(&mut toks, &mut word, &mut in_word);
                if chars.get(i + 1) == Some(&'&') {
                    toks.push(Token::And);
                    i += 2;
                } else {
                    // Background jobs run in the foreground in the sim.
                    toks.push(Token::Semi);
                    i += 1;
                }
            }
            '|' => {
                end_word(&mut toks, &mut word, &mut in_word);
                if chars.get(i + 1) == Some(&'|') {
                    toks.push(Token::Or);
                    i += 2;
                } else {
                    toks.push(Token::Pipe);
                    i += 1;
                }
            }
            '>' => {
                // A word made only of one digit directly before '>' is the fd number.
                let mut fd = 1;
                if in_word {
                    if let [Seg::Lit(s)] = word.as_slice() {
                        if s.len() == 1 && s.chars().all(|c| c.is_ascii_digit()) {
                            fd = s.parse().unwrap_or(1);
                            word.clear();
                            in_word = false;
                        }
                    }
                }
                end_word(&mut toks, &mut word, &mut in_word);
                i += 1;
                let append = chars.get(i) == Some(&'>');
                if append {
                    i += 1;
                }
                if chars.get(i) == Some(&'&') {
                    let start = i + 1;
                    let mut j = start;
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                    let to: String = chars[start..j].iter().collect();
                    let to = to.parse().map_err(|_| "syntax error: bad fd number".to_string())?;
                    toks.push(Token::Dup { fd, to });
                    i = j;
                } else {
                    toks.push(Token::RedirOut { fd, append });
                }
            }
            '<' => {
                end_word(&mut toks, &mut word, &mut in_word);
                toks.push(Token::RedirIn);
                i += 1;
            }
            '\'' => {
                in_word = true;
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                if j >= chars.len() {
                    return Err("syntax error: unterminated quoted string".into());
                }
                let s: String = chars[start..j].iter().collect();
                match word.last_mut() {
                    Some(Seg::Lit(l)) => l.push_str(&s),
                    _ => word.push(Seg::Lit(s)),
                }
                i = j + 1;
            }
            '"' => {
                in_word = true;
                if !matches!(word.last(), Some(Seg::Lit(_))) {
                    word.push(Seg::Lit(String::new()));
                }
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("syntax error: unterminated quoted string".into()),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') => match chars.get(i + 1) {
                            Some(n @ ('$' | '`' | '"' | '\\')) => {
                                push_lit(&mut word, *n);
                                i += 2;
                            }
                            Some('\n') => i += 2,
                            _ => {
                                push_lit(&mut word, '\\');
                                i += 1;
                            }
                        },
                        Some('$') => i = dollar(&chars, i, &mut word),
                        Some(c) => {
                            push_lit(&mut word, *c);
                            i += 1;
                        }
                    }
                }
            }
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(n) => {
                        in_word = true;
                        push_lit(&mut word, *n);
                    }
                    None => {
                        in_word = true;
                        push_lit(&mut word, '\\');
                    }
                }
                i += 2;
            }
            '$' => {
                in_word = true;
                i = dollar(&chars, i, &mut word);
            }
            c => {
                in_word = true;
                push_lit(&mut word, c);
                i += 1;
            }
        }
    }
    end_word(&mut toks, &mut word, &mut in_word);
    Ok(toks)
}

/// Convenience for callers that just need argv (no operators): splits like the shell would.
pub fn split_words(src: &str) -> Result<Vec<String>, String> {
    let toks = tokenize(src)?;
    let mut out = Vec::new();
    for t in toks {
        match t {
            Token::Word(w) => out.push(expand(&w, 0)),
            _ => return Err("unexpected operator".into()),
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq)]
enum Redir {
    Out { fd: u32, append: bool, target: Word },
    Dup { fd: u32, to: u32 },
    In(Word),
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Simple {
    words: Vec<Word>,
    redirs: Vec<Redir>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Conn {
    Always,
    IfOk,
    IfFail,
}

/// A list of pipelines, each with the connector that decides whether it runs.
type Script = Vec<(Conn, Vec<Simple>)>;

fn parse(tokens: Vec<Token>) -> Result<Script, String> {
    let mut script: Script = Vec::new();
    let mut pipeline: Vec<Simple> = Vec::new();
    let mut cur = Simple::default();
    let mut conn = Conn::Always;
    let mut it = tokens.into_iter().peekable();
    let syntax = |t: &str| format!("syntax error: unexpected '{t}'");
    while let Some(t) = it.next() {
        match t {
            Token::Word(w) => cur.words.push(w),
            Token::RedirOut { fd, append } => match it.next() {
                Some(Token::Word(target)) => cur.redirs.push(Redir::Out { fd, append, target }),
                _ => return Err(syntax("newline")),
            },
            Token::RedirIn => match it.next() {
                Some(Token::Word(target)) => cur.redirs.push(Redir::In(target)),
                _ => return Err(syntax("newline")),
            },
            Token::Dup { fd, to } => cur.redirs.push(Redir::Dup { fd, to }),
            Token::Pipe => {
                if cur.words.is_empty() {
                    return Err(syntax("|"));
                }
                pipeline.push(std::mem::take(&mut cur));
            }
            op @ (Token::Semi | Token::And | Token::Or) => {
                let empty = cur.words.is_empty() && cur.redirs.is_empty();
                if empty && !pipeline.is_empty() {
                    return Err(syntax("|"));
                }
                if !empty {
                    pipeline.push(std::mem::take(&mut cur));
                }
                if pipeline.is_empty() {
                    if op == Token::Semi {
                        continue;
                    }
                    return Err(syntax(if op == Token::And { "&&" } else { "||" }));
                }
                script.push((conn, std::mem::take(&mut pipeline)));
                conn = match op {
                    Token::And => Conn::IfOk,
                    Token::Or => Conn::IfFail,
                    _ => Conn::Always,
                };
                if conn != Conn::Always && it.peek().is_none() {
                    return Err(syntax("end of file"));
                }
            }
        }
    }
    if !cur.words.is_empty() || !cur.redirs.is_empty() {
        pipeline.push(cur);
    } else if !pipeline.is_empty() {
        return Err(syntax("end of file"));
    }
    if !pipeline.is_empty() {
        script.push((conn, pipeline));
    }
    Ok(script)
}

fn expand(w: &Word, status: i32) -> String {
    let mut s = String::new();
    for seg in w {
        match seg {
            Seg::Lit(l) => s.push_str(l),
            Seg::Status => s.push_str(&status.to_string()),
            Seg::Var(v) => s.push_str(match v.as_str() {
                "HOME" => "/",
                "EXTERNAL_STORAGE" => "/sdcard",
                "ANDROID_DATA" => "/data",
                "ANDROID_ROOT" => "/system",
                "TMPDIR" => "/data/local/tmp",
                "USER" => "shell",
                "PATH" => "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin",
                "$" => "4242",
                _ => "",
            }),
        }
    }
    s
}

/// Longest total `sleep` one command line may request (keeps hung tests bounded).
const MAX_SLEEP: Duration = Duration::from_secs(600);

/// Runs one simple command (`argv` expanded, its stdin, its I/O) and returns its status: the shell knows the
/// grammar, the commands are given to it (`commands::run`), so the interpreter below them never names them.
pub type Run = fn(&mut Device, &[String], &[u8], &mut CmdIo) -> i32;

/// Runs a full command line against the device, each simple command through `command`. `stdin` feeds the first
/// command of every pipeline (used by streamed installs).
pub fn run_script(dev: &mut Device, src: &str, stdin: &[u8], command: Run) -> ExecResult {
    let mut res = ExecResult::default();
    dev.umask = super::device::ADBD_UMASK;
    let script = match tokenize(src).and_then(parse) {
        Ok(s) => s,
        Err(e) => {
            res.stderr = format!("/system/bin/sh: {e}\n").into_bytes();
            res.status = 2;
            return res;
        }
    };
    let mut status = 0;
    for (conn, pipeline) in script {
        let run = match conn {
            Conn::Always => true,
            Conn::IfOk => status == 0,
            Conn::IfFail => status != 0,
        };
        if !run {
            continue;
        }
        let mut input: Vec<u8> = stdin.to_vec();
        let n = pipeline.len();
        let mut exit = None;
        for (idx, simple) in pipeline.iter().enumerate() {
            let mut io = CmdIo { at: res.sleep, ..CmdIo::default() };
            let argv: Vec<String> = simple.words.iter().map(|w| expand(w, status)).collect();
            // Redirections decide where this command's streams go.
            let mut out_to: Option<(String, bool)> = None;
            let mut err_to: Option<(String, bool)> = None;
            let mut err_to_out = false;
            let mut out_to_err = false;
            let mut redir_error = None;
            for r in &simple.redirs {
                match r {
                    Redir::Out { fd: 1, append, target } => out_to = Some((expand(target, status), *append)),
                    Redir::Out { fd: 2, append, target } => err_to = Some((expand(target, status), *append)),
                    Redir::Out { .. } => {}
                    Redir::Dup { fd: 2, to: 1 } => err_to_out = true,
                    Redir::Dup { fd: 1, to: 2 } => out_to_err = true,
                    Redir::Dup { .. } => {}
                    Redir::In(t) => {
                        let p = expand(t, status);
                        match dev.fs.read(&p) {
                            Ok(d) => input = d.to_vec(),
                            Err(e) => redir_error = Some(format!("/system/bin/sh: {p}: {}\n", e.message())),
                        }
                    }
                }
            }
            let code = if let Some(e) = redir_error {
                io.err(&e);
                1
            } else if argv.is_empty() {
                0
            } else {
                command(dev, &argv, &input, &mut io)
            };
            res.sleep = (res.sleep + io.sleep).min(MAX_SLEEP);
            res.follow |= io.follow;
            let (mut out, mut err) = (io.out, io.err);
            if out_to_err {
                err.append(&mut out);
            }
            if err_to_out {
                out.append(&mut err);
            }
            let mut code = code;
            for (target, data, is_err) in [(out_to, &mut out, false), (err_to, &mut err, true)] {
                if let Some((path, append)) = target {
                    let bytes = std::mem::take(data);
                    if path == "/dev/null" {
                        continue;
                    }
                    if (path == "/dev/stderr") != is_err && (path == "/dev/stderr" || path == "/dev/stdout") {
                        // Cross-stream redirection through /dev/std*.
                        if is_err {
                            res.stdout.extend_from_slice(&bytes);
                        } else {
                            res.stderr.extend_from_slice(&bytes);
                        }
                        continue;
                    }
                    let r = if append {
                        dev.fs.append(&path, &bytes, now_unix_secs())
                    } else {
                        dev.fs.write(&path, bytes, 0o660, now_unix_secs(), false)
                    };
                    if let Err(e) = r {
                        res.stderr.extend_from_slice(
                            format!("/system/bin/sh: can't create {path}: {}\n", e.message()).as_bytes(),
                        );
                        code = 1;
                    }
                }
            }
            res.stderr.extend_from_slice(&err);
            if idx + 1 == n {
                res.stdout.extend_from_slice(&out);
                status = code;
            } else {
                input = out;
            }
            if io.exit.is_some() {
                exit = io.exit;
                break;
            }
        }
        if let Some(code) = exit {
            res.status = code;
            return res;
        }
    }
    res.status = status;
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::commands::run_line as run_script;

    #[test]
    fn splits_quotes_and_escapes() {
        assert_eq!(split_words("input text 'hello world'").unwrap(), vec!["input", "text", "hello world"]);
        assert_eq!(split_words(r#"echo "a \"b\" \$c" d\ e"#).unwrap(), vec!["echo", "a \"b\" $c", "d e"]);
        assert_eq!(split_words("echo 'it'\\''s'").unwrap(), vec!["echo", "it's"]);
        assert_eq!(split_words("echo '' x").unwrap(), vec!["echo", "", "x"]);
        assert!(split_words("echo 'open").is_err());
        assert!(split_words("echo \"open").is_err());
    }

    #[test]
    fn tokenizes_operators_and_redirections() {
        let t = tokenize("a 2>/dev/null; b && c || d | e 2>&1 >>f").unwrap();
        let ops: Vec<&Token> = t.iter().filter(|t| !matches!(t, Token::Word(_))).collect();
        assert_eq!(
            ops,
            vec![
                &Token::RedirOut { fd: 2, append: false },
                &Token::Semi,
                &Token::And,
                &Token::Or,
                &Token::Pipe,
                &Token::Dup { fd: 2, to: 1 },
                &Token::RedirOut { fd: 1, append: true },
            ]
        );
        assert!(parse(tokenize("a &&").unwrap()).is_err());
        assert!(parse(tokenize("| a").unwrap()).is_err());
    }

    fn dev() -> Device {
        Device::new(super::super::SimConfig::default(), "127.0.0.1:5555".into())
    }

    #[test]
    fn exit_code_markers_and_sequencing() {
        let mut d = dev();
        let r = run_script(&mut d, "false; echo X$?", b"");
        assert_eq!(String::from_utf8_lossy(&r.stdout), "X1\n");
        assert_eq!(r.status, 0);
        let r = run_script(&mut d, "true && echo ok || echo no; false && echo a || echo \"b$?\"", b"");
        assert_eq!(String::from_utf8_lossy(&r.stdout), "ok\nb1\n");
        let r = run_script(&mut d, "nosuchcmd arg; echo rc=$?", b"");
        assert_eq!(String::from_utf8_lossy(&r.stdout), "rc=127\n");
        assert_eq!(String::from_utf8_lossy(&r.stderr), "/system/bin/sh: nosuchcmd: inaccessible or not found\n");
        let r = run_script(&mut d, "exit 3; echo never", b"");
        assert_eq!(r.status, 3);
        assert!(r.stdout.is_empty());
    }

    #[test]
    fn pipes_and_redirections() {
        let mut d = dev();
        let r = run_script(&mut d, "getprop | grep ro.product.model", b"");
        assert_eq!(String::from_utf8_lossy(&r.stdout), "[ro.product.model]: [Pixel 7 (sim)]\n");
        let r = run_script(&mut d, "echo hi > /sdcard/x.txt; cat /sdcard/x.txt; cat /nope 2>/dev/null; echo $?", b"");
        assert_eq!(String::from_utf8_lossy(&r.stdout), "hi\n1\n");
        assert!(r.stderr.is_empty());
        let r = run_script(&mut d, "cat /nope 2>&1", b"");
        assert_eq!(String::from_utf8_lossy(&r.stdout), "cat: /nope: No such file or directory\n");
    }
}
