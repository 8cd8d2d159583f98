//! A `call --session` line split into words the way a POSIX shell splits the one-shot command line, so a line
//! copied from `call TOOL key="a b" element:='{"text":"OK"}'` means the same in a session: whitespace separates
//! words; `'…'` is literal; `"…"` keeps `$`, `` ` ``, `"`, `\` and a newline escaped by a backslash, everything
//! else literal; a backslash outside quotes takes the next character as it is. No expansion of any kind (`$HOME`,
//! `*`, `~` stay as written): there is no shell here, only its quoting.

/// The words of `line`, or why it cannot be split (an unterminated quote, a trailing backslash).
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word exists once anything was written for it, even `''` (an empty argument).
    let mut started = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            '\'' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a ' quote is not closed".into()),
                    }
                }
            }
            '"' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('$' | '`' | '"' | '\\')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a \" quote is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a \" quote is not closed".into()),
                    }
                }
            }
            '\\' => {
                started = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => return Err("the line ends with a lone backslash".into()),
                }
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    if started {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split;

    fn ok(line: &str) -> Vec<String> {
        split(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn quotes_as_a_shell_reads_them() {
        assert_eq!(ok(r#"text="a b"  x=1"#), ["text=a b", "x=1"]);
        assert_eq!(ok(r#"element:='{"text":"Increment"}'"#), [r#"element:={"text":"Increment"}"#]);
        assert_eq!(ok(r#"text='it'\''s' b="say \"hi\" \n""#), ["text=it's", r#"b=say "hi" \n"#]);
        assert_eq!(ok(r"text=a\ b"), ["text=a b"]);
        assert_eq!(ok(r#"text="" x=''"#), ["text=", "x="]);
        assert_eq!(ok("  "), Vec::<String>::new());
        assert_eq!(ok("text=$HOME*"), ["text=$HOME*"]);
        assert_eq!(ok(r#"text="50%" t='a"b'"#), ["text=50%", "t=a\"b"]);
        for bad in ["text='open", "text=\"open", "x=\\"] {
            assert!(split(bad).is_err(), "{bad}");
        }
    }
}
