//! `ime list [-s]`, `ime set|enable ID`, `ime reset`: the input method manager's shell answers
//! (tests/fixtures/real/ime-list-s-coloros-gboard-only.txt for `list -s`); the current one is
//! `secure default_input_method`.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;

pub(super) fn ime(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let current_key = ("secure".to_string(), "default_input_method".to_string());
    match args {
        ["list", rest @ ..] => {
            let short = rest.contains(&"-s");
            for id in &dev.imes {
                if short {
                    io.out(&format!("{id}\n"));
                } else {
                    let pkg = id.split('/').next().unwrap_or("");
                    io.out(&format!("{id}:\n  mId={id} mSettingsActivityName=null\n  mIsDefaultResId=0x0\n  Service:\n    packageName={pkg}\n"));
                }
            }
            0
        }
        ["set", id, ..] | ["enable", id, ..] => {
            if dev.imes.iter().any(|i| i == id) {
                if args[0] == "set" {
                    dev.settings.insert(current_key, id.to_string());
                    io.out(&format!("Input method {id} selected for user #0\n"));
                } else {
                    io.out(&format!("Input method {id}: already enabled for user #0\n"));
                }
                0
            } else {
                io.err(&format!("Unknown input method {id} cannot be selected for user #0\n"));
                1
            }
        }
        ["reset", ..] => {
            dev.settings.insert(current_key, dev.imes[0].clone());
            0
        }
        _ => {
            io.err(
                "ime <command>:\n  list [-a] [-s]\n  enable [--user <USER_ID>] <ID>\n  set [--user <USER_ID>] <ID>\n",
            );
            1
        }
    }
}
