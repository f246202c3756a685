// Package guest is what litterbox puts into a sandbox and needs of its
// image: the image's platform and labels, the snapshot scanner for that
// platform (embedded, or a file the options name) installed into the
// sandbox's run dir, the copy of a commit into /src with the setup command
// after it, and the guest contract's check of the image's tools.
package guest

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/internal/scanbin"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// The snapshot scanner is a small static program (scanner/) that runs in
// the sandbox. litterbox embeds one per Linux platform (internal/scanbin) and
// copies into each sandbox the one of its image's platform, so the host
// binary may be anything: dynamic, macOS, another architecture.

// ImagePlatform is the os/arch of image as the engine holds it, "" when it
// holds none (the engine pulls it at create), or ErrImage for a platform
// litterbox has no scanner for.
func (g *Guest) ImagePlatform(ctx context.Context, image string) (string, error) {
	p, _, err := g.ImageInfo(ctx, image)
	return p, err
}

// ImageInfo is ImagePlatform with what the engine says of the image (the
// zero Image when it holds none). An image carrying labels of litterbox's
// own (dev.litterbox.*) is refused: its sandboxes would inherit them, and
// the labels are litterbox's state.
func (g *Guest) ImageInfo(ctx context.Context, image string) (string, provider.Image, error) {
	img, err := g.Provider.Image(ctx, image)
	if errors.Is(err, provider.ErrNoImage) {
		return "", provider.Image{}, nil
	}
	if err != nil {
		return "", provider.Image{}, err
	}
	if !scanbin.Supported(img.OS, img.Arch) {
		return "", img, core.NewError(api.ErrImage, "The image %s is for %s/%s, but litterbox can record work only in %s sandboxes. Use an image for one of those.",
			image, img.OS, img.Arch, strings.Join(scanbin.Platforms, " or "))
	}
	var ours []string
	for k := range img.Labels {
		// The extra labels (LITTERBOX_LABELS) are set on every sandbox,
		// over the image's: a test suite labels its images with them.
		if _, extra := g.ExtraLabels[k]; strings.HasPrefix(k, api.LabelPrefix) && !extra {
			ours = append(ours, k)
		}
	}
	if len(ours) > 0 {
		sort.Strings(ours)
		return "", img, core.NewError(api.ErrImage, "The image %s carries litterbox's own labels (%s), which its sandboxes would inherit: rebuild it without them.", image, strings.Join(ours, ", "))
	}
	return img.OS + "/" + img.Arch, img, nil
}

// Scanner is the scanner to copy into a container.
type Scanner struct {
	// Path is where it goes in the container, unique per content.
	Path     string
	platform string // the embedded scanner of this os/arch, or ""
	host     string // else a file on the host (Options.Scanner)
	// size and sum (SHA-256, hex) are what the install checks the copy
	// against before it takes its place.
	size int64
	sum  string
}

// Open reads the scanner's program: the embedded one is read in place,
// never copied, and only when a container lacks it.
func (f Scanner) Open() (io.ReadCloser, error) {
	if f.platform != "" {
		goos, goarch, _ := strings.Cut(f.platform, "/")
		return scanbin.Set.Open(goos, goarch)
	}
	return os.Open(f.host)
}

// Guest installs the scanner and fills sandboxes. It remembers, per
// process, the scanner of each platform, the platform of each container
// whose create did not know it, and which containers are being installed
// into.
type Guest struct {
	*core.Common
	installs  sync.Map // container id -> *sync.Mutex
	platforms sync.Map // container id -> platform, found by asking the engine
	embedded  sync.Map // platform -> func() (Scanner, error)
	override  func() (Scanner, error)
}

// New is the guest side of c's sandboxes.
func New(c *core.Common) *Guest {
	g := &Guest{Common: c}
	g.override = sync.OnceValues(g.overrideScanner)
	return g
}

// ScannerFor is the scanner for h's container: LITTERBOX_SCANNER when set
// (a static build of litterbox or of litterbox-scan, for tests), else the
// embedded one of the container's platform.
func (g *Guest) ScannerFor(ctx context.Context, h *api.Handle) (Scanner, error) {
	if g.Scanner != "" {
		return g.override()
	}
	platform, err := g.containerPlatform(ctx, h)
	if err != nil {
		return Scanner{}, err
	}
	f, _ := g.embedded.LoadOrStore(platform, sync.OnceValues(func() (Scanner, error) {
		goos, goarch, _ := strings.Cut(platform, "/")
		sum, err := scanbin.Set.Sum(goos, goarch)
		if err != nil {
			return Scanner{}, fmt.Errorf("sandbox '%s': %w", h.Slug, err)
		}
		size, err := scanbin.Set.Size(goos, goarch)
		if err != nil {
			return Scanner{}, fmt.Errorf("sandbox '%s': %w", h.Slug, err)
		}
		return Scanner{Path: api.RunDir + "/scan-" + sum[:16], platform: platform, size: size, sum: sum}, nil
	}))
	return f.(func() (Scanner, error))()
}

// containerPlatform is the platform its create recorded, else (the engine
// pulled the image at create) the platform of its image now, asked once per
// container.
func (g *Guest) containerPlatform(ctx context.Context, h *api.Handle) (string, error) {
	if h.Platform != "" {
		return h.Platform, nil
	}
	if p, ok := g.platforms.Load(h.Ref.ID); ok {
		return p.(string), nil
	}
	image := h.Image
	if image == "" { // made before the label existed
		image = g.Image
	}
	img, err := g.Provider.Image(ctx, image)
	if err != nil {
		return "", fmt.Errorf("find the platform of sandbox '%s' (image %s), to pick its snapshot scanner: %w", h.Slug, image, err)
	}
	p := img.OS + "/" + img.Arch
	g.platforms.Store(h.Ref.ID, p)
	return p, nil
}

// overrideScanner checks the scanner the options name (LITTERBOX_SCANNER):
// a static Linux executable, since the sandbox may have no C library.
func (g *Guest) overrideScanner() (Scanner, error) {
	p := g.Scanner
	fi, err := os.Stat(p)
	if err != nil {
		return Scanner{}, fmt.Errorf("LITTERBOX_SCANNER: %w", err)
	}
	f, err := elf.Open(p)
	if err != nil {
		return Scanner{}, fmt.Errorf("LITTERBOX_SCANNER %s is not a Linux executable (%v): unset it, and litterbox uses its own scanner", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return Scanner{}, fmt.Errorf("LITTERBOX_SCANNER %s is dynamically linked, and sandboxes may have no C library: build it with CGO_ENABLED=0, or unset it, and litterbox uses its own scanner", p)
		}
	}
	h := sha256.New()
	r, err := os.Open(p)
	if err != nil {
		return Scanner{}, fmt.Errorf("LITTERBOX_SCANNER: %w", err)
	}
	defer r.Close()
	size, err := io.Copy(h, r)
	if err != nil {
		return Scanner{}, fmt.Errorf("LITTERBOX_SCANNER: %w", err)
	}
	return Scanner{host: p, Path: fmt.Sprintf("%s/lb-%x-%x", api.RunDir, fi.Size(), fi.ModTime().UnixNano()), size: size, sum: hex.EncodeToString(h.Sum(nil))}, nil
}

// InstallScanner copies the scanner into the container's root-owned RunDir,
// where the sandbox user can run it but not replace it, nor read it: the
// kernel starts a program its user cannot read non-dumpable, so the
// command the scanner runs, of the same uid, cannot open the scanner's
// descriptors under /proc (its stream to the host). The copy lands under
// a temporary name and takes the scanner's place only once its size (and
// its SHA-256, where the image has sha256sum) are the scanner's: a stream
// cut short (litterbox killed mid-copy, a cancelled call: the container
// reads the end of its stdin) leaves nothing, and the next snapshot
// installs it again, where a truncated scanner would crash every scan. A
// concurrent install is harmless. The installs of one container still run
// one at a time, and one that finds the scanner in place writes nothing:
// RunDir is a small tmpfs (runDirSize), and the first tool calls of a new
// sandbox, made at once, each found the scanner missing and wrote a copy of
// their own until it was full.
func (g *Guest) InstallScanner(ctx context.Context, h *api.Handle, bin Scanner) error {
	mu, _ := g.installs.LoadOrStore(h.Ref.ID, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	f, err := bin.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = g.Common.Exec(ctx, provider.ExecRequest{
		Ref: h.Ref, User: "0", Stdin: f,
		Cmd: []string{"sh", "-c", installScript, "sh", bin.Path, strconv.FormatInt(bin.size, 10), bin.sum},
	})
	if err != nil {
		return core.ExecError(h, "install the snapshot scanner", err)
	}
	return nil
}

// installScript installs the scanner read from stdin at $1, checked against
// its size $2 and SHA-256 $3 (stat is in the guest contract, sha256sum is
// not: a stream cut short is caught by its size).
const installScript = `set -e
if [ -x "$1" ]; then cat >/dev/null; exit 0; fi
t=$(mktemp "$1.XXXXXX")
trap 'rm -f "$t"' EXIT
cat >"$t"
n=$(stat -c %s "$t")
if [ "$n" != "$2" ]; then echo "litterbox: the scanner's copy was cut short ($n of $2 bytes); nothing was installed" >&2; exit 1; fi
if command -v sha256sum >/dev/null 2>&1; then
	s=$(sha256sum <"$t"); s=${s%% *}
	if [ "$s" != "$3" ]; then echo "litterbox: the scanner's copy is not the scanner (SHA-256 $s, want $3); nothing was installed" >&2; exit 1; fi
fi
# Execute-only, so the kernel starts it non-dumpable and the command it runs
# cannot open its stream through /proc. gVisor's kernel will not execute a
# file its user cannot read (exit 126): there the scanner is readable and
# makes itself non-dumpable as it starts (PR_SET_DUMPABLE).
case "$(uname -r)" in
*gvisor*) chmod 0755 "$t" ;;
*) chmod 0711 "$t" ;;
esac
mv -f "$t" "$1"`

// MissingImage is an image the engine does not hold. Litterbox pulls no
// image but DefaultImage: an image named in a configuration (which an
// agent's branch can change) or on the command line is used only once the
// user has put it on the engine.
func MissingImage(image string) error {
	return core.NewError(api.ErrImage, "The image %s is not on the engine, and litterbox does not pull the images you name. Get it with `docker pull %s`, or build it with `docker build -t %s .` (see docs/images.md), then create again.", image, image, image)
}

// ProbeScanner is the scanner program for the probe sandboxes' image: the
// probe's two sides are subcommands of it. An image the engine does not
// hold yet (it pulls it at create) is taken to be of this machine's
// architecture.
func (g *Guest) ProbeScanner(ctx context.Context, image string) (Scanner, error) {
	if g.Scanner != "" {
		return g.override()
	}
	platform, err := g.ImagePlatform(ctx, image)
	if err != nil {
		return Scanner{}, err
	}
	if platform == "" {
		platform = "linux/" + runtime.GOARCH
	}
	goos, goarch, _ := strings.Cut(platform, "/")
	if _, err := scanbin.Set.Sum(goos, goarch); err != nil {
		return Scanner{}, err
	}
	return Scanner{platform: platform}, nil
}
