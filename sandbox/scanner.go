package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/internal/scanbin"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// The snapshot scanner is a small static program (scanner/) that runs in
// the sandbox. litterbox embeds one per Linux platform (internal/scanbin) and
// copies into each sandbox the one of its image's platform, so the host
// binary may be anything: dynamic, macOS, another architecture.

// imagePlatform is the os/arch of image as the engine holds it, "" when it
// holds none (the engine pulls it at create), or ErrImage for a platform
// litterbox has no scanner for.
func (s *Service) imagePlatform(ctx context.Context, image string) (string, error) {
	p, _, err := s.imageInfo(ctx, image)
	return p, err
}

// imageInfo is imagePlatform with what the engine says of the image (the
// zero Image when it holds none). An image carrying labels of litterbox's
// own (dev.litterbox.*) is refused: its sandboxes would inherit them, and
// the labels are litterbox's state.
func (s *Service) imageInfo(ctx context.Context, image string) (string, provider.Image, error) {
	img, err := s.Provider.Image(ctx, image)
	if errors.Is(err, provider.ErrNoImage) {
		return "", provider.Image{}, nil
	}
	if err != nil {
		return "", provider.Image{}, err
	}
	if !scanbin.Supported(img.OS, img.Arch) {
		return "", img, core.NewError(ErrImage, "The image %s is for %s/%s, but litterbox can record work only in %s sandboxes. Use an image for one of those.",
			image, img.OS, img.Arch, strings.Join(scanbin.Platforms, " or "))
	}
	var ours []string
	for k := range img.Labels {
		// The extra labels (LITTERBOX_LABELS) are set on every sandbox,
		// over the image's: a test suite labels its images with them.
		if _, extra := s.ExtraLabels[k]; strings.HasPrefix(k, LabelPrefix) && !extra {
			ours = append(ours, k)
		}
	}
	if len(ours) > 0 {
		sort.Strings(ours)
		return "", img, core.NewError(ErrImage, "The image %s carries litterbox's own labels (%s), which its sandboxes would inherit: rebuild it without them.", image, strings.Join(ours, ", "))
	}
	return img.OS + "/" + img.Arch, img, nil
}

// scannerFile is the scanner to copy into a container.
type scannerFile struct {
	inContainer string // path inside the container, unique per content
	data        []byte // the embedded scanner, or nil
	host        string // else a file on the host (LITTERBOX_SCANNER)
}

func (f scannerFile) open() (io.ReadCloser, error) {
	if f.data != nil {
		return io.NopCloser(bytes.NewReader(f.data)), nil
	}
	return os.Open(f.host)
}

var (
	scannerInstalls sync.Map // container id -> *sync.Mutex
	platforms       sync.Map // container id -> platform, found by asking the engine
	embeddedOnce    sync.Map // platform -> func() (scannerFile, error)
	overrideOnce    = sync.OnceValues(overrideScanner)
)

// scannerFor is the scanner for h's container: LITTERBOX_SCANNER when set
// (a static build of litterbox or of litterbox-scan, for tests), else the
// embedded one of the container's platform.
func (s *Service) scannerFor(ctx context.Context, h *Handle) (scannerFile, error) {
	if os.Getenv("LITTERBOX_SCANNER") != "" {
		return overrideOnce()
	}
	platform, err := s.containerPlatform(ctx, h)
	if err != nil {
		return scannerFile{}, err
	}
	f, _ := embeddedOnce.LoadOrStore(platform, sync.OnceValues(func() (scannerFile, error) {
		goos, goarch, _ := strings.Cut(platform, "/")
		b, err := scanbin.For(goos, goarch)
		if err != nil {
			return scannerFile{}, fmt.Errorf("sandbox '%s': %w", h.Slug, err)
		}
		sum := sha256.Sum256(b)
		return scannerFile{inContainer: RunDir + "/scan-" + hex.EncodeToString(sum[:8]), data: b}, nil
	}))
	return f.(func() (scannerFile, error))()
}

// containerPlatform is the platform its create recorded, else (the engine
// pulled the image at create) the platform of its image now, asked once per
// container.
func (s *Service) containerPlatform(ctx context.Context, h *Handle) (string, error) {
	if h.Platform != "" {
		return h.Platform, nil
	}
	if p, ok := platforms.Load(h.Ref.ID); ok {
		return p.(string), nil
	}
	image := h.Image
	if image == "" { // made before the label existed
		image = s.Image
	}
	img, err := s.Provider.Image(ctx, image)
	if err != nil {
		return "", fmt.Errorf("find the platform of sandbox '%s' (image %s), to pick its snapshot scanner: %w", h.Slug, image, err)
	}
	p := img.OS + "/" + img.Arch
	platforms.Store(h.Ref.ID, p)
	return p, nil
}

// overrideScanner checks LITTERBOX_SCANNER: a static Linux executable,
// since the sandbox may have no C library.
func overrideScanner() (scannerFile, error) {
	p := os.Getenv("LITTERBOX_SCANNER")
	fi, err := os.Stat(p)
	if err != nil {
		return scannerFile{}, fmt.Errorf("LITTERBOX_SCANNER: %w", err)
	}
	f, err := elf.Open(p)
	if err != nil {
		return scannerFile{}, fmt.Errorf("LITTERBOX_SCANNER %s is not a Linux executable (%v): unset it, and litterbox uses its own scanner", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return scannerFile{}, fmt.Errorf("LITTERBOX_SCANNER %s is dynamically linked, and sandboxes may have no C library: build it with CGO_ENABLED=0, or unset it, and litterbox uses its own scanner", p)
		}
	}
	return scannerFile{host: p, inContainer: fmt.Sprintf("%s/lb-%x-%x", RunDir, fi.Size(), fi.ModTime().UnixNano())}, nil
}

// installScanner copies the scanner into the container's root-owned RunDir,
// where the sandbox user can run it but not replace it. The copy lands under
// a temporary name and is renamed, so a concurrent install is harmless. The
// installs of one container still run one at a time, and one that finds the
// scanner in place writes nothing: RunDir is a small tmpfs (runDirSize), and
// the first tool calls of a new sandbox, made at once, each found the
// scanner missing and wrote a copy of their own until it was full.
func (s *Service) installScanner(ctx context.Context, h *Handle, bin scannerFile) error {
	mu, _ := scannerInstalls.LoadOrStore(h.Ref.ID, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	f, err := bin.open()
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = s.Common.Exec(ctx, provider.ExecRequest{
		Ref: h.Ref, User: "0", Stdin: f,
		Cmd: []string{"sh", "-c", `set -e; if [ -x "$1" ]; then cat >/dev/null; exit 0; fi; t=$(mktemp "$1.XXXXXX"); cat >"$t"; chmod 0755 "$t"; mv -f "$t" "$1"`, "sh", bin.inContainer},
	})
	if err != nil {
		return core.ExecError(h, "install the snapshot scanner", err)
	}
	return nil
}

// missingImage is an image the engine does not hold. Litterbox pulls no
// image but DefaultImage: an image named in a configuration (which an
// agent's branch can change) or on the command line is used only once the
// user has put it on the engine.
func missingImage(image string) error {
	return core.NewError(ErrImage, "The image %s is not on the engine, and litterbox does not pull the images you name. Get it with `docker pull %s`, or build it with `docker build -t %s .` (see docs/images.md), then create again.", image, image, image)
}
