"""LevelDB 1.23 itself (the system's libleveldb, libleveldb-dev) through its C API, for tests
that need the real library's databases with options plyvel's bundled copy does not honour
(`max_file_size`). `None` from `library()` when it is not installed."""

import ctypes
import ctypes.util
from typing import Iterator, List, Optional, Tuple

_NAMES = ["libleveldb.so.1d", "libleveldb.so.1", "libleveldb.so"]


def library() -> Optional[ctypes.CDLL]:
    names = list(_NAMES)
    found = ctypes.util.find_library("leveldb")
    if found:
        names.insert(0, found)
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        _declare(lib)
        return lib
    return None


def _declare(lib: ctypes.CDLL) -> None:
    p, c, s, u8 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_ubyte
    err = ctypes.POINTER(ctypes.c_char_p)
    sigs = {
        "leveldb_options_create": ([], p),
        "leveldb_options_destroy": ([p], None),
        "leveldb_options_set_create_if_missing": ([p, u8], None),
        "leveldb_options_set_write_buffer_size": ([p, s], None),
        "leveldb_options_set_max_file_size": ([p, s], None),
        "leveldb_open": ([p, c, err], p),
        "leveldb_close": ([p], None),
        "leveldb_writeoptions_create": ([], p),
        "leveldb_writeoptions_destroy": ([p], None),
        "leveldb_readoptions_create": ([], p),
        "leveldb_readoptions_destroy": ([p], None),
        "leveldb_writebatch_create": ([], p),
        "leveldb_writebatch_destroy": ([p], None),
        "leveldb_writebatch_put": ([p, c, s, c, s], None),
        "leveldb_writebatch_delete": ([p, c, s], None),
        "leveldb_write": ([p, p, p, err], None),
        "leveldb_compact_range": ([p, c, s, c, s], None),
        "leveldb_create_iterator": ([p, p], p),
        "leveldb_iter_destroy": ([p], None),
        "leveldb_iter_seek_to_first": ([p], None),
        "leveldb_iter_seek": ([p, c, s], None),
        "leveldb_iter_valid": ([p], u8),
        "leveldb_iter_next": ([p], None),
        "leveldb_iter_key": ([p, ctypes.POINTER(s)], ctypes.POINTER(ctypes.c_char)),
        "leveldb_iter_value": ([p, ctypes.POINTER(s)], ctypes.POINTER(ctypes.c_char)),
        "leveldb_free": ([p], None),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res


class LevelDB:
    """A database open in LevelDB 1.23 (it holds the directory's lock)."""

    def __init__(self, lib, path, *, create=True, write_buffer_size=4 << 20, max_file_size=2 << 20):
        self.lib = lib
        options = lib.leveldb_options_create()
        lib.leveldb_options_set_create_if_missing(options, 1 if create else 0)
        lib.leveldb_options_set_write_buffer_size(options, write_buffer_size)
        lib.leveldb_options_set_max_file_size(options, max_file_size)
        error = ctypes.c_char_p()
        self.db = lib.leveldb_open(options, str(path).encode(), ctypes.byref(error))
        lib.leveldb_options_destroy(options)
        self._check(error)
        self.write_options = lib.leveldb_writeoptions_create()
        self.read_options = lib.leveldb_readoptions_create()

    def _check(self, error) -> None:
        if error.value is not None:
            message = error.value.decode(errors="replace")
            raise RuntimeError(f"LevelDB: {message}")

    def write(self, puts: List[Tuple[bytes, bytes]] = (), deletes: List[bytes] = ()) -> None:
        """One atomic write batch."""
        lib = self.lib
        batch = lib.leveldb_writebatch_create()
        for k, v in puts:
            lib.leveldb_writebatch_put(batch, k, len(k), v, len(v))
        for k in deletes:
            lib.leveldb_writebatch_delete(batch, k, len(k))
        error = ctypes.c_char_p()
        lib.leveldb_write(self.db, self.write_options, batch, ctypes.byref(error))
        lib.leveldb_writebatch_destroy(batch)
        self._check(error)

    def compact_range(self) -> None:
        self.lib.leveldb_compact_range(self.db, None, 0, None, 0)

    def items(self, start: Optional[bytes] = None, stop: Optional[bytes] = None) -> Iterator:
        lib = self.lib
        it = lib.leveldb_create_iterator(self.db, self.read_options)
        try:
            if start is None:
                lib.leveldb_iter_seek_to_first(it)
            else:
                lib.leveldb_iter_seek(it, start, len(start))
            n = ctypes.c_size_t()
            while lib.leveldb_iter_valid(it):
                k = ctypes.string_at(lib.leveldb_iter_key(it, ctypes.byref(n)), n.value)
                if stop is not None and k >= stop:
                    break
                v = ctypes.string_at(lib.leveldb_iter_value(it, ctypes.byref(n)), n.value)
                yield k, v
                lib.leveldb_iter_next(it)
        finally:
            lib.leveldb_iter_destroy(it)

    def close(self) -> None:
        if self.db:
            self.lib.leveldb_close(self.db)
            self.lib.leveldb_writeoptions_destroy(self.write_options)
            self.lib.leveldb_readoptions_destroy(self.read_options)
            self.db = None
