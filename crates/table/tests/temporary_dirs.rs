//! `remove_temporaries` removes registered temporary directories with their contents, as
//! well as the temporary files of tables being built, and refuses new ones afterwards. It
//! closes the registry for the whole process, so this is a test binary of its own.

use std::fs;
use std::io;

use leveltable_table::BuildOptions;
use leveltable_table::atomic_file::{
    AtomicTableFile, TemporaryDir, create_temporary, register_temporary_dir, remove_temporaries,
    rename_releasing,
};

#[test]
fn temporary_dirs_and_files_go_on_remove_temporaries() {
    let root = tempfile::tempdir().unwrap();

    // Dropped normally: removed, and no longer registered.
    let dropped = TemporaryDir::new_in(root.path(), ".sort-").unwrap();
    let dropped_path = dropped.path().to_owned();
    fs::write(dropped_path.join("run"), b"x").unwrap();
    drop(dropped);
    assert!(!dropped_path.exists());

    // A registered directory whose guard is dropped is the caller's again.
    let released = root.path().join("released");
    fs::create_dir(&released).unwrap();
    drop(register_temporary_dir(&released).unwrap());

    let sort = TemporaryDir::new_in(root.path(), ".sort-").unwrap();
    fs::create_dir(sort.path().join("sub")).unwrap();
    fs::write(sort.path().join("sub/run-000000.ldb"), vec![1u8; 4096]).unwrap();
    let staging = root.path().join("staging");
    fs::create_dir(&staging).unwrap();
    fs::write(staging.join("000001.ldb"), b"table").unwrap();
    let guard = register_temporary_dir(&staging).unwrap();
    let mut table =
        AtomicTableFile::create(root.path().join("t.ldb"), BuildOptions::default()).unwrap();
    table.add(b"k", b"v").unwrap();
    let temp = table.temp_path().to_owned();

    // Files made under the lock: one released by a rename (kept), one not (removed).
    let kept = root.path().join("kept");
    let (file, kept_guard) =
        create_temporary(&kept, false, || fs::File::create_new(&kept)).unwrap();
    drop(file);
    let pointer_temp = root.path().join("pointer.tmp");
    let (_, pointer_guard) =
        create_temporary(&pointer_temp, false, || fs::write(&pointer_temp, b"kept")).unwrap();
    let pointer = root.path().join("pointer");
    let mut guards = vec![kept_guard, pointer_guard];
    rename_releasing(&pointer_temp, &pointer, &mut guards).unwrap();
    assert!(guards.is_empty());
    let made_dir = root.path().join("made");
    let (_, dir_guard) = create_temporary(&made_dir, true, || fs::create_dir(&made_dir)).unwrap();
    fs::write(made_dir.join("inside"), b"x").unwrap();

    assert_eq!(remove_temporaries(), 4);
    assert!(!made_dir.exists());
    assert!(!sort.path().exists());
    assert!(!staging.exists());
    assert!(!temp.exists());
    assert!(released.exists(), "a released directory is kept");

    let refused = TemporaryDir::new_in(root.path(), ".sort-").unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::Interrupted);
    let refused = register_temporary_dir(root.path().join("later")).unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::Interrupted);
    let later = root.path().join("later");
    let refused = create_temporary(&later, false, || fs::write(&later, b"x")).unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::Interrupted);
    assert!(!later.exists());
    let refused = rename_releasing(&pointer, &root.path().join("p2"), &mut Vec::new()).unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::Interrupted);
    assert!(table.finish().is_err());
    drop((sort, guard, dir_guard));
    let mut left: Vec<String> = fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["kept", "pointer", "released"]);
}
