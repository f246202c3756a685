// Package staticbin is what internal/scanbin and internal/gatewaybin share: a
// program of litterbox's built static for each Linux platform a container can
// run, embedded, and picked by the container's platform.
package staticbin

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
)

// Set is one program's embedded builds.
type Set struct {
	// FS holds bin/NAME-OS-ARCH for every platform, bin/SUMS (their
	// SHA-256, as sha256sum prints them) and bin/GOVERSION.
	FS embed.FS
	// Name is the program's name ("litterbox-scan").
	Name string
	// What names it in errors ("snapshot scanner").
	What string
	// Only ends the error for a platform without a build; %s is the
	// platforms there are ("litterbox runs sandboxes on %s only").
	Only string
	// Pkg is its main package, which the generator builds.
	Pkg string
	// Platforms are the platforms it is built for, "os/arch", sorted.
	Platforms []string
}

// FileName is the name of the build for os/arch in bin/.
func (s *Set) FileName(os, arch string) string { return s.Name + "-" + os + "-" + arch }

// For returns the build for os/arch, or an error naming the platforms there
// are.
func (s *Set) For(os, arch string) ([]byte, error) {
	b, err := s.FS.ReadFile("bin/" + s.FileName(os, arch))
	if err != nil {
		return nil, s.none(os, arch)
	}
	return b, nil
}

// Open reads the build for os/arch without copying it: the program's
// own read-only data, paged in as it is read.
func (s *Set) Open(os, arch string) (io.ReadCloser, error) {
	f, err := s.FS.Open("bin/" + s.FileName(os, arch))
	if err != nil {
		return nil, s.none(os, arch)
	}
	return f, nil
}

// Sum is the SHA-256 of the build for os/arch, in hex, as the generator
// recorded it in bin/SUMS: naming a build reads none of its bytes (each is
// megabytes, which would stay resident).
func (s *Set) Sum(os, arch string) (string, error) {
	sums, err := s.FS.ReadFile("bin/SUMS")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(sums), "\n") {
		if sum, file, ok := strings.Cut(line, "  "); ok && file == s.FileName(os, arch) {
			return sum, nil
		}
	}
	return "", s.none(os, arch)
}

// Size is the size in bytes of the build for os/arch, read from the
// embedded file's header, not its bytes.
func (s *Set) Size(os, arch string) (int64, error) {
	fi, err := fs.Stat(s.FS, "bin/"+s.FileName(os, arch))
	if err != nil {
		return 0, s.none(os, arch)
	}
	return fi.Size(), nil
}

// none is the error for a platform without a build.
func (s *Set) none(os, arch string) error {
	return fmt.Errorf("no %s for %s/%s: "+s.Only, s.What, os, arch, strings.Join(s.Platforms, " or "))
}

// Supported reports whether there is a build for os/arch.
func (s *Set) Supported(os, arch string) bool {
	return slices.Contains(s.Platforms, os+"/"+arch)
}
