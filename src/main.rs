use clap::Parser;

fn main() {
    let arguments = distribute::cli::Arguments::parse();
    let code = match distribute::cli::run(arguments) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("distribute: error: {error:#}");
            2
        }
    };
    std::process::exit(code);
}
