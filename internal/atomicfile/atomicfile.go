// Package atomicfile writes a file so that a reader, a second writer or a
// kill never sees it half written: the data goes to a temporary file of its
// own in the same folder, which then takes the file's name.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write replaces path with data, made with mode, creating its folder.
// Two writers of one path (two goroutines of an MCP server) each use a
// temporary file of their own; the last rename wins whole.
func Write(path string, data []byte, mode os.FileMode) error {
	tmp, err := temp(path, data, mode)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Create makes path with data only if it does not exist yet, and reports
// whether it did: of two creators exactly one wins, and the file is whole
// from the moment it has its name.
func Create(path string, data []byte, mode os.FileMode) (bool, error) {
	tmp, err := temp(path, data, mode)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// temp writes data to a new temporary file beside path and returns its
// name.
func temp(path string, data []byte, mode os.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chmod(mode), f.Close()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
