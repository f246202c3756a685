//go:build !linux

package scanner

import "os"

// ctime falls back to the modification time where the standard library's
// stat has no portable ctime field. Sandboxes run Linux, so this only keeps
// the package building elsewhere (a host that reads scans needs none of it).
func ctime(fi os.FileInfo) int64 {
	return fi.ModTime().UnixNano()
}

// fileID has no owner to tell where the standard library's stat holds
// none portably: a sandbox's refusals are read on Linux only.
func fileID(os.FileInfo) (uid int, id [2]uint64, ok bool) {
	return 0, id, false
}
