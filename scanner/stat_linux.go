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
