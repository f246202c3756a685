//go:build !linux

package scanner

import "os"

// ctime falls back to the modification time where the standard library's
// stat has no portable ctime field. Sandboxes run Linux, so this only keeps
// the package building elsewhere (a host that reads scans needs none of it).
func ctime(fi os.FileInfo) int64 {
	return fi.ModTime().UnixNano()
}
