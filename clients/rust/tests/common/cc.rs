//! Building and running C programs in the tests: the system compilers, and the libraries this `cargo test` built.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The C compiler: `$CC`, else `cc`.
pub fn compiler() -> String {
    std::env::var("CC").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "cc".into())
}

/// The C++ compiler: `$CXX`, else `c++`.
pub fn cxx_compiler() -> String {
    std::env::var("CXX").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "c++".into())
}

/// Whether `tool` runs (`tool --version` succeeds).
pub fn runs(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The system libraries a static link of a Rust library needs (`rustc --print native-static-libs` for the target).
pub fn native_static_libs() -> &'static [&'static str] {
    if cfg!(target_os = "macos") {
        &["-lSystem", "-lc", "-lm"]
    } else {
        &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]
    }
}

/// The folder of the test binary, where cargo puts the libraries it built for this run (`target/<profile>/deps`).
pub fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent().expect("target/<profile>/deps").to_path_buf()
}

/// The static library this `cargo test` run built: next to the test binary (`target/<profile>/deps/`), else
/// uplifted in `target/<profile>/`.
pub fn static_library() -> PathBuf {
    let deps = deps_dir();
    let candidates = [deps.join("libldp_client.a"), deps.parent().expect("target/<profile>").join("libldp_client.a")];
    candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| {
        panic!("no static library at {candidates:?}: is `staticlib` still a crate type in Cargo.toml?")
    })
}

/// Runs `cmd` (`what` names it in the panic): its standard output, or a panic with all it printed.
pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({cmd:?}):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A folder of this test process, `<CARGO_TARGET_TMPDIR>/<name>/<pid>`, empty; the folders of runs over an hour old
/// under `<name>` are removed.
pub fn scratch_dir(name: &str) -> PathBuf {
    let parent = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    for e in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
        let age = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
        if age.is_some_and(|a| a > std::time::Duration::from_secs(3600)) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let dir = parent.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The C program `source` (a path under the crate) compiled as C99 with every warning an error, `flags`, the
/// crate's `include/` and its static library, into `exe`: the command and its output.
pub fn compile_c(source: &str, exe: &Path, flags: &[&str]) -> (Command, Output) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let compiler = compiler();
    let mut cmd = Command::new(&compiler);
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1"])
        .args(flags)
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join(source))
        .arg(static_library())
        .args(native_static_libs())
        .arg("-o")
        .arg(exe);
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run the C compiler {compiler:?}: {e}"));
    (cmd, out)
}

/// A C test program of the crate: its source (a path under the crate), the flags it is always built with, and the
/// scratch folder of this test process it is built into. What each C interface test (`c_prio3`, `c_poplar1`,
/// `c_api`) compiles, runs and runs again under the sanitizers.
pub struct CProgram {
    pub source: &'static str,
    pub flags: &'static [&'static str],
    pub dir: PathBuf,
}

/// The flags of a build under AddressSanitizer and UndefinedBehaviorSanitizer (leaks included).
pub const SANITIZER_FLAGS: [&str; 3] = ["-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"];

/// The environment of a run under the sanitizers: a leak or an error fails the run.
pub const SANITIZER_ENV: [(&str, &str); 2] =
    [("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23"), ("UBSAN_OPTIONS", "halt_on_error=1")];

impl CProgram {
    /// The program built with `extra` flags into `dir/name`: the command and its output, and the executable.
    pub fn compile(&self, name: &str, extra: &[&str]) -> (Command, Output, PathBuf) {
        let exe = self.dir.join(name);
        let flags: Vec<&str> = self.flags.iter().chain(extra).copied().collect();
        let (cmd, out) = compile_c(self.source, &exe, &flags);
        (cmd, out, exe)
    }

    /// The program built into `dir/name`; a panic with the compiler's output if it does not build.
    pub fn build(&self, name: &str) -> PathBuf {
        let (cmd, out, exe) = self.compile(name, &[]);
        assert!(
            out.status.success(),
            "compiling {} failed ({cmd:?}):\n{}{}",
            self.source,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        exe
    }

    /// The program built into `dir/name` under the sanitizers ([`SANITIZER_FLAGS`]); `None`, with a note, where the
    /// compiler has no sanitizer runtime, unless `LDP_REQUIRE_ASAN` is set (then a panic).
    pub fn build_sanitized(&self, name: &str) -> Option<PathBuf> {
        let (cmd, out, exe) = self.compile(name, &SANITIZER_FLAGS);
        if out.status.success() {
            return Some(exe);
        }
        let why = format!("{cmd:?}:\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(
            std::env::var_os("LDP_REQUIRE_ASAN").is_none(),
            "no sanitizer build, and LDP_REQUIRE_ASAN is set: {why}"
        );
        eprintln!("skipped: the C compiler cannot build with -fsanitize=address ({why})");
        None
    }
}

/// Runs the C program `exe` with `args` and `env`: its standard output; a panic with all it printed if it failed.
pub fn run_program(exe: &Path, args: &[&Path], env: &[(&str, &str)]) -> String {
    let out = Command::new(exe).args(args).envs(env.iter().copied()).output().expect("the C program runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the C program failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
