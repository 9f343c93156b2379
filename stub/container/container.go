// Package container runs the vLLM twin (package stub) in a container, in
// the style of a testcontainers-go module: Run(ctx, opts...) with module
// defaults first and the caller's options last, a typed container, and the
// partly started container returned with its error for cleanup. The image
// is FROM scratch and holds only one static executable that serves the
// twin, so nothing is pulled: vllmstub built from the module, a prebuilt
// one (WithBinary), or a program's own executable (WithExecutable,
// WithOwnExecutable: an installed vetbench serves the twin as `vetbench
// twin`, with no module or Go toolchain). A program that only reads or
// compares receipts never links this package.
package container

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/vetbench/vetbench/stub"
)

// Port is the twin's port inside its container.
const Port = "8000/tcp"

// dockerfile builds the image from the binary alone.
//
//go:embed Dockerfile
var dockerfile []byte

// options are Run's own settings.
type options struct {
	twin       stub.Config
	binary     string   // prebuilt static executable; vllmstub built from source when empty
	binArgs    []string // what makes binary serve the twin; nil: binary is vllmstub
	own        []string // WithOwnExecutable's args; nil: not asked
	replayFile string
	moduleDir  string
}

// Option configures Run itself. It rides in the same list as testcontainers
// customizers and does nothing to the container request (Customize is a
// no-op): Run reads it before building the request.
type Option func(*options) error

// Customize does nothing: Run reads the option itself.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = Option(nil)

// WithConfig configures the twin in the container: the config becomes
// vllmstub's command line and environment (stub.Config.Args). Values no
// command line can carry (Config.Replay, Config.Adjust) make Run fail with
// errors.ErrUnsupported; use WithReplayFile for a replay. Config.Log gets
// what the container prints, as the in-process twin's log would.
func WithConfig(cfg stub.Config) Option {
	return func(o *options) error { o.twin = cfg; return nil }
}

// WithBinary uses a prebuilt static (CGO_ENABLED=0, linux) vllmstub binary
// instead of building one (see BuildBinary).
func WithBinary(path string) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("WithBinary: empty path")
		}
		o.binary = path
		return nil
	}
}

// WithReplayFile copies a receipt (vetbench or typevet JSON) into the
// container and serves its answers (vllmstub --replay).
func WithReplayFile(path string) Option {
	return func(o *options) error {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("WithReplayFile: %w", err)
		}
		o.replayFile = path
		return nil
	}
}

// WithModuleDir names the vetbench module root to build the binary from
// (default: found with `go env GOMOD` from the working directory).
func WithModuleDir(dir string) Option {
	return func(o *options) error { o.moduleDir = dir; return nil }
}

// Container is the twin running in a container.
type Container struct {
	testcontainers.Container
	url string
}

// BaseURL is the twin's base URL as seen from the host (no trailing /v1):
// the one of the docker host's addresses where /health answered.
func (c *Container) BaseURL(ctx context.Context) (string, error) {
	if c == nil || c.url == "" {
		return "", errors.New("vllmstub container: not ready")
	}
	return c.url, nil
}

// startupTimeout bounds how long Run waits for /health.
const startupTimeout = 60 * time.Second

// Run builds an image FROM scratch holding one static executable that
// serves the twin (vllmstub built from the module with `go build` unless
// WithBinary, WithExecutable or WithOwnExecutable name another; see
// ImageRepo), starts it and waits until /health answers. The twin is configured with WithConfig;
// other testcontainers customizers are applied after the module's own
// settings, so they win. No reaper is needed: unless the caller set
// TESTCONTAINERS_RYUK_DISABLED, Run sets it to true (the reaper is an
// image to pull, and the machines vetbench runs on may reach no
// registry); the owner terminates the container. As in testcontainers
// modules, a container that started is returned with the error, for
// cleanup (testcontainers.CleanupContainer or Terminate).
func Run(ctx context.Context, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	noReaper()
	var o options
	for _, opt := range opts {
		if apply, ok := opt.(Option); ok {
			if err := apply(&o); err != nil {
				return nil, fmt.Errorf("run vllmstub container: %w", err)
			}
		}
	}
	args, env, err := o.twin.Args()
	if err != nil {
		return nil, fmt.Errorf("run vllmstub container: %w", err)
	}
	dir, tag, err := buildContext(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("run vllmstub container: %w", err)
	}
	defer os.RemoveAll(dir)
	defaults := []testcontainers.ContainerCustomizer{
		testcontainers.WithExposedPorts(Port),
		testcontainers.WithCmdArgs(args...),
	}
	image := ImageRepo + ":" + tag
	if !imageExists(ctx, image) {
		image = ""
		defaults = append(defaults, testcontainers.WithDockerfile(testcontainers.FromDockerfile{
			Context: dir, Dockerfile: "Dockerfile", Repo: ImageRepo, Tag: tag, KeepImage: true}))
	}
	if len(env) > 0 {
		defaults = append(defaults, testcontainers.WithEnv(env))
	}
	if o.twin.Log != nil {
		// Config.Log cannot cross into the container: the twin's output
		// (its serving line, an engine that fell behind its model clock)
		// is followed back to it instead.
		defaults = append(defaults, testcontainers.WithLogConsumers(logTo{o.twin.Log}))
	}
	if o.replayFile != "" {
		defaults = append(defaults,
			testcontainers.WithFiles(testcontainers.ContainerFile{HostFilePath: o.replayFile, ContainerFilePath: "/replay.json", FileMode: 0o444}),
			testcontainers.WithCmdArgs("--replay", "/replay.json"))
	}
	ctr, err := testcontainers.Run(ctx, image, append(defaults, opts...)...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr}
	}
	if err != nil {
		return c, fmt.Errorf("run vllmstub container: %w", err)
	}
	if err := c.waitHealthy(ctx); err != nil {
		return c, fmt.Errorf("run vllmstub container: %w", err)
	}
	return c, nil
}

// logTo writes what the container prints to w.
type logTo struct{ w io.Writer }

func (l logTo) Accept(line testcontainers.Log) { _, _ = l.w.Write(line.Content) }

// ImageRepo is the repository of the images Run builds. Each is tagged
// with a digest of the binary and the Dockerfile and kept, so a later Run
// of the same binary starts without building (on some storage drivers a
// build takes seconds); `docker image rm` removes them.
const ImageRepo = "vetbench-vllmstub"

// buildContext writes the image's build context to a new temporary
// directory, the binary and the Dockerfile, and returns the image tag
// their digest names.
func buildContext(ctx context.Context, o options) (dir, tag string, err error) {
	dir, err = os.MkdirTemp("", "vllmstub-image-")
	if err != nil {
		return "", "", err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	name, args, err := o.placeExecutable(ctx, dir)
	if err != nil {
		return "", "", err
	}
	df := dockerfileFor(name, args)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), df, 0o644); err != nil {
		return "", "", err
	}
	h := sha256.New()
	h.Write(df)
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", "", err
	}
	return dir, hex.EncodeToString(h.Sum(nil))[:20], nil
}

// imageExists says whether the daemon holds image; any error means no
// (Run then builds it).
func imageExists(ctx context.Context, image string) bool {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return false
	}
	defer cli.Close()
	_, err = cli.ImageInspect(ctx, image)
	return err == nil
}

// waitHealthy polls /health on the mapped port at each candidate host
// until one answers 200. The candidates are testcontainers' docker host
// and localhost: testcontainers guesses the docker bridge gateway when it
// runs inside a container, which is wrong when the daemon runs in that
// same container. A twin that exits (a bad flag, a bad profile) fails the
// wait at once, with what it printed.
func (c *Container) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	var hosts []string
	port := ""
	for {
		// A container that exited has no mapped port: ask its state first.
		if st, err := c.State(ctx); err == nil && !st.Running {
			return fmt.Errorf("vllmstub exited with code %d before /health answered: %s", st.ExitCode, c.logTail(ctx))
		}
		if port == "" {
			if p, err := c.MappedPort(ctx, Port); err == nil {
				port = p.Port()
				hosts = []string{"localhost"}
				if h, err := c.Host(ctx); err == nil && h != "localhost" {
					hosts = append([]string{h}, hosts...)
				}
			}
		}
		for _, h := range hosts {
			url := "http://" + net.JoinHostPort(h, port)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
			if err != nil {
				return err
			}
			if res, err := hc.Do(req); err == nil {
				_ = res.Body.Close()
				if res.StatusCode == http.StatusOK {
					c.url = url
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for /health on %v port %q: %w", hosts, port, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail is the end of what the container printed, on one line.
func (c *Container) logTail(ctx context.Context) string {
	rc, err := c.Logs(ctx)
	if err != nil {
		return fmt.Sprintf("(no logs: %v)", err)
	}
	defer rc.Close()
	data, _ := io.ReadAll(io.LimitReader(rc, 64<<10))
	out := strings.Join(strings.Fields(string(data)), " ")
	if len(out) > 500 {
		out = "..." + out[len(out)-500:]
	}
	return out
}

// BuildBinary builds a static linux vllmstub (CGO_ENABLED=0) for the
// Docker host's architecture from the vetbench module at moduleDir, for
// WithBinary (build once, run many).
func BuildBinary(ctx context.Context, moduleDir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, "./cmd/vllmstub")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/vllmstub in %s: %w: %s", moduleDir, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// moduleRoot finds the module root with `go env GOMOD`.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("no go command to build cmd/vllmstub with: %w", err)
	}
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module: cannot find cmd/vllmstub to build (use WithModuleDir or WithBinary)")
	}
	return filepath.Dir(mod), nil
}

// DockerAvailable reports whether a Docker daemon answers, without
// starting anything: nil when Run can run.
func DockerAvailable(ctx context.Context) (err error) {
	noReaper()
	defer func() {
		// testcontainers panics on some broken Docker setups.
		if r := recover(); r != nil {
			err = fmt.Errorf("docker: %v", r)
		}
	}()
	provider, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	defer provider.Close()
	if err := provider.Health(ctx); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// noReaper turns testcontainers' reaper (ryuk) off unless the user set
// TESTCONTAINERS_RYUK_DISABLED. testcontainers reads its configuration
// from the environment once, at first use, so this runs before any
// testcontainers call of this package.
func noReaper() {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}
