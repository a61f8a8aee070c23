//! `tackle-sandbox-helper`: the sandbox helper on its own, for programs that embed Tackle's sandbox
//! without being able to call `tackle_sandbox::run_helper_if_requested` in their own `main`
//! (and for this crate's tests). Run as `tackle-sandbox-helper __tackle_sandbox STAGE POLICY -- CMD`;
//! `tackle-sandbox-helper check` prints what this machine supports.

fn main() {
    if let Some(code) = tackle_sandbox::run_helper_if_requested() {
        std::process::exit(code);
    }
    match std::env::args().nth(1).as_deref() {
        Some("check") => {
            let helper = match std::env::current_exe() {
                Ok(path) => path,
                Err(e) => {
                    eprintln!("error: cannot find this executable: {e}");
                    std::process::exit(1);
                }
            };
            let support = tackle_sandbox::Support::probe(&helper);
            match serde_json::to_string_pretty(&support) {
                Ok(text) => println!("{text}"),
                Err(e) => eprintln!("error: {e}"),
            }
        }
        _ => {
            eprintln!(
                "usage: tackle-sandbox-helper check | tackle-sandbox-helper __tackle_sandbox STAGE POLICY -- COMMAND..."
            );
            std::process::exit(2);
        }
    }
}
