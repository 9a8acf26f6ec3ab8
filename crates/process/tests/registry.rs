//! The registry: what `remove_temporaries` removes, what a release makes final, and that
//! nothing is created or made final once the process is exiting. `remove_temporaries`
//! closes the registry for the whole process, so this is a test binary of its own.

use std::fs;
use std::io;

use leveltable_process::{
    create_registered, create_temporary, register_temporary_dir, release_with, remove_temporaries,
    rename_releasing,
};

#[test]
fn released_paths_stay_and_registered_ones_go() {
    let root = tempfile::tempdir().unwrap();

    // A file made final by a release is left alone.
    let kept = root.path().join("kept.tmp");
    let (_, guard) = create_temporary(&kept, false, || fs::write(&kept, b"k")).unwrap();
    let mut guards = vec![guard];
    rename_releasing(&kept, &root.path().join("kept"), &mut guards).unwrap();
    assert!(guards.is_empty());

    // A failed release releases nothing.
    let pending = root.path().join("pending.tmp");
    let (_, guard) = create_temporary(&pending, false, || fs::write(&pending, b"p")).unwrap();
    let mut guards = vec![guard];
    let err = release_with(&mut guards, || -> io::Result<()> {
        Err(io::Error::other("refused"))
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "refused");
    assert_eq!(guards.len(), 1);

    // A file named only once it exists.
    let (named, _guard) = create_registered(false, || {
        let path = root.path().join("random-name");
        fs::write(&path, b"r")?;
        Ok((path.clone(), path))
    })
    .unwrap();

    // A directory the caller made.
    let dir = root.path().join("staging");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("part"), b"x").unwrap();
    let _dir_guard = register_temporary_dir(&dir).unwrap();

    assert_eq!(remove_temporaries(), 3);
    assert!(!pending.exists() && !named.exists() && !dir.exists());
    assert!(root.path().join("kept").exists());

    // Exiting: nothing new, and nothing made final.
    let late = root.path().join("late");
    let err = create_temporary(&late, false, || fs::write(&late, b"l")).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Interrupted);
    assert!(!late.exists());
    let mut none = Vec::new();
    let err = release_with(&mut none, || -> io::Result<()> {
        panic!("must not run after remove_temporaries")
    })
    .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Interrupted);
    assert_eq!(
        register_temporary_dir(root.path()).unwrap_err().kind(),
        io::ErrorKind::Interrupted
    );
}
