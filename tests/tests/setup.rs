//! Set-up's decisions: which Debian packages `scripts/setup.sh --dry-run` would install,
//! run against fake machines (directory trees given as `DRAMATIS_SETUP_ROOT`); and the
//! test script's promise to run every suite whatever failed before it.
//!
//! The first machine is a fresh one of the project's kind: it has `libclang-cpp.so.14`
//! (Debian's libclang-cpp14) but no libclang that bindgen can load. A check that matched
//! `libclang*.so*` skipped `libclang-dev` there, and the build then failed.

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::Path;
use std::process::Command;

use dramatis_tests::repo_root;

/// What set-up would install on the machine under `root`.
fn would_install(root: &Path, extra: &[&str]) -> Vec<String> {
    would_install_with(root, extra, None)
}

/// Like [`would_install`], with `LIBCLANG_PATH` set (inside the fake machine) or not.
fn would_install_with(root: &Path, extra: &[&str], libclang_path: Option<&str>) -> Vec<String> {
    let mut setup = Command::new("bash");
    setup
        .arg(repo_root().join("scripts/setup.sh"))
        .arg("--dry-run")
        .args(extra)
        .env("DRAMATIS_SETUP_ROOT", root)
        .env_remove("LIBCLANG_PATH")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LIBRARY_PATH");
    if let Some(path) = libclang_path {
        setup.env("LIBCLANG_PATH", path);
    }
    let output = setup.output().expect("bash runs set-up");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "set-up --dry-run failed: {stderr}");
    let decided: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("would install: "))
        .collect();
    assert_eq!(decided.len(), 1, "one decision line, got {stdout:?}");
    match decided[0] {
        "nothing" => Vec::new(),
        packages => packages.split(' ').map(str::to_owned).collect(),
    }
}

fn program(root: &Path, path: &str) {
    let file = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, "#!/bin/sh\n").expect("write program");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn file(root: &Path, path: &str) {
    let file = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, "").expect("write file");
}

fn link(root: &Path, path: &str, to: &str) {
    let at = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
    symlink(to, &at).expect("symlink");
}

/// A fresh machine of the project's kind: a C++ compiler, unzip, Node and npm, and
/// Debian's libclang-cpp14 — the C++ library, which bindgen does not load.
fn fresh_machine(root: &Path) {
    for p in [
        "/usr/bin/c++",
        "/usr/bin/unzip",
        "/usr/bin/node",
        "/usr/bin/npm",
    ] {
        program(root, p);
    }
    file(root, "/usr/lib/llvm-14/lib/libclang-cpp.so.14");
    link(
        root,
        "/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14",
        "../llvm-14/lib/libclang-cpp.so.14",
    );
    // Near names that are not the programs the build runs.
    std::fs::create_dir_all(root.join("usr/lib/llvm-14/lib/cmake")).expect("mkdir");
    std::fs::create_dir_all(root.join("usr/share/cmake-3.25")).expect("mkdir");
}

/// Debian's libclang1-14: the library bindgen loads, without clang's own headers.
fn libclang_library(root: &Path) {
    file(root, "/usr/lib/x86_64-linux-gnu/libclang-14.so.14.0.6");
    link(
        root,
        "/usr/lib/x86_64-linux-gnu/libclang-14.so.1",
        "libclang-14.so.14.0.6",
    );
    link(
        root,
        "/usr/lib/llvm-14/lib/libclang-14.so.1",
        "../../x86_64-linux-gnu/libclang-14.so.1",
    );
}

/// libclang-common-14-dev: stddef.h and the other compiler headers.
fn clang_headers(root: &Path) {
    file(root, "/usr/lib/llvm-14/lib/clang/14.0.6/include/stddef.h");
}

#[test]
fn a_fresh_machine_with_only_libclang_cpp_gets_libclang_dev_and_cmake() {
    let root = tempfile::tempdir().expect("tempdir");
    fresh_machine(root.path());
    assert_eq!(would_install(root.path(), &[]), ["cmake", "libclang-dev"]);
    assert_eq!(
        would_install(root.path(), &["--browser"]),
        ["cmake", "libclang-dev", "chromium"]
    );
}

#[test]
fn a_machine_with_the_library_bindgen_loads_needs_nothing() {
    let root = tempfile::tempdir().expect("tempdir");
    fresh_machine(root.path());
    program(root.path(), "/usr/bin/cmake");
    libclang_library(root.path());
    clang_headers(root.path());
    assert_eq!(would_install(root.path(), &[]), Vec::<String>::new());
    program(root.path(), "/usr/bin/chromium");
    assert_eq!(
        would_install(root.path(), &["--browser"]),
        Vec::<String>::new()
    );
}

#[test]
fn libclang_without_the_compiler_headers_is_not_enough() {
    let root = tempfile::tempdir().expect("tempdir");
    fresh_machine(root.path());
    program(root.path(), "/usr/bin/cmake");
    libclang_library(root.path());
    assert_eq!(would_install(root.path(), &[]), ["libclang-dev"]);
}

#[test]
fn each_program_is_found_only_as_an_executable_file_on_the_path() {
    let root = tempfile::tempdir().expect("tempdir");
    fresh_machine(root.path());
    libclang_library(root.path());
    clang_headers(root.path());
    // cmake as a directory, and unzip and npm as files that cannot run.
    std::fs::create_dir_all(root.path().join("usr/bin/cmake")).expect("mkdir");
    for p in ["usr/bin/unzip", "usr/bin/npm"] {
        std::fs::set_permissions(root.path().join(p), std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
    }
    std::fs::remove_file(root.path().join("usr/bin/c++")).expect("rm");
    assert_eq!(
        would_install(root.path(), &[]),
        ["g++", "cmake", "unzip", "npm"]
    );
}

#[test]
fn libclang_path_is_the_only_place_searched_when_set() {
    // bindgen's loader looks only in LIBCLANG_PATH when it is set, so set-up must too.
    let root = tempfile::tempdir().expect("tempdir");
    fresh_machine(root.path());
    program(root.path(), "/usr/bin/cmake");
    libclang_library(root.path());
    clang_headers(root.path());
    std::fs::create_dir_all(root.path().join("opt/empty")).expect("mkdir");
    assert_eq!(
        would_install_with(root.path(), &[], Some("/opt/empty")),
        ["libclang-dev"]
    );
    // Pointed at the directory that has it, the same machine needs nothing.
    assert_eq!(
        would_install_with(root.path(), &[], Some("/usr/lib/llvm-14/lib")),
        Vec::<String>::new()
    );
}

#[test]
fn nats_server_is_installed_for_the_jetstream_tests_and_found_where_debian_puts_it() {
    let root = tempfile::tempdir().expect("tempdir");
    fresh_machine(root.path());
    program(root.path(), "/usr/bin/cmake");
    libclang_library(root.path());
    clang_headers(root.path());
    // The test set also reads certificates with openssl, which a fresh machine lacks.
    assert_eq!(
        would_install(root.path(), &["--nats"]),
        ["openssl", "nats-server"]
    );
    program(root.path(), "/usr/bin/openssl");
    assert_eq!(would_install(root.path(), &["--nats"]), ["nats-server"]);
    // A file of that name that cannot run is not the server.
    file(root.path(), "/usr/sbin/nats-server");
    assert_eq!(would_install(root.path(), &["--nats"]), ["nats-server"]);
    // Debian's package installs it in /usr/sbin, which is not on every user's PATH.
    std::fs::remove_file(root.path().join("usr/sbin/nats-server")).expect("rm");
    program(root.path(), "/usr/sbin/nats-server");
    assert_eq!(
        would_install(root.path(), &["--nats"]),
        Vec::<String>::new()
    );
    assert_eq!(would_install(root.path(), &[]), Vec::<String>::new());
}

/// `scripts/test.sh` with a `cargo` that fails and records how it was called, first on
/// `PATH`: the formatting suite fails, and the suite after it runs all the same (its
/// build is called, and fails); the summary has a line per suite and the exit is 1.
#[test]
fn the_test_script_runs_every_suite_after_a_failure_and_sums_them_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = dir.path().join("calls");
    let fake = dir.path().join("bin/cargo");
    std::fs::create_dir_all(fake.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\nexit 3\n", calls.display()),
    )
    .expect("write the fake cargo");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        fake.parent().expect("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg(repo_root().join("scripts/test.sh"))
        .args(["format", "viewer"])
        .env("PATH", path)
        .output()
        .expect("bash runs the test script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let called: Vec<String> = std::fs::read_to_string(&calls)
        .expect("cargo was called")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        called,
        [
            "fmt --all -- --check",
            "build --release --quiet -p dramatis"
        ],
        "both suites ran, in order"
    );
    let summary: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "==== test: summary")
        .skip(1)
        .collect();
    assert_eq!(summary.len(), 3, "{stdout}");
    assert!(
        summary[0].starts_with("format   FAILED (exit 3)"),
        "{stdout}"
    );
    assert!(summary[1].starts_with("viewer   FAILED"), "{stdout}");
    assert_eq!(summary[2], "test: 2 of 2 suites failed");
    // An unknown suite is refused before anything runs.
    let unknown = Command::new("bash")
        .arg(repo_root().join("scripts/test.sh"))
        .arg("everything")
        .output()
        .expect("bash runs the test script");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown suite everything"));
}
