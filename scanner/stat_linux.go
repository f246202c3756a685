package scanner

import (
	"os"
	"syscall"
	"time"
)

// ctime is fi's inode change time, which no user can set (see scan.go).
func ctime(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec).UnixNano()
	}
	return fi.ModTime().UnixNano()
}

// fileID is fi's owner and identity (device and inode); ok is false when
// the stat holds none.
func fileID(fi os.FileInfo) (uid int, id [2]uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, id, false
	}
	return int(st.Uid), [2]uint64{uint64(st.Dev), st.Ino}, true
}
