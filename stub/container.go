package stub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// ContainerPort is the twin's port inside its container.
const ContainerPort = "8000/tcp"

// Customize lets a server Option be passed to RunContainer among
// testcontainers customizers; RunContainer turns it into vllmstub flags.
// It does nothing to the request itself.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = Option(nil)

// containerOptions are RunContainer's own settings.
type containerOptions struct {
	binary     string // prebuilt static vllmstub; built from source when empty
	replayFile string
	moduleDir  string
}

// ContainerOption configures RunContainer itself.
type ContainerOption func(*containerOptions) error

// Customize does nothing to the request: RunContainer reads the option.
func (o ContainerOption) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = ContainerOption(nil)

// WithBinary uses a prebuilt static (CGO_ENABLED=0, linux) vllmstub
// binary instead of building one (see BuildBinary).
func WithBinary(path string) ContainerOption {
	return func(o *containerOptions) error { o.binary = path; return nil }
}

// WithReplayFile copies a receipt (vetbench or typevet JSON) into the
// container and serves it with --replay (WithReplay has no file to send).
func WithReplayFile(path string) ContainerOption {
	return func(o *containerOptions) error { o.replayFile = path; return nil }
}

// WithModuleDir names the vetbench module root to build the binary from
// (default: found with `go env GOMOD` from the working directory).
func WithModuleDir(dir string) ContainerOption {
	return func(o *containerOptions) error { o.moduleDir = dir; return nil }
}

// Container is the twin running in a container.
type Container struct {
	testcontainers.Container
	// Binary is the static binary the image was built from.
	Binary string
	url    string
}

// BaseURL is the twin's base URL as seen from the host: the one of the
// docker host's addresses where /health answered.
func (c *Container) BaseURL(ctx context.Context) (string, error) {
	if c.url == "" {
		return "", errors.New("vllmstub container: not ready")
	}
	return c.url, nil
}

// startupTimeout bounds how long RunContainer waits for /health.
const startupTimeout = 60 * time.Second

// waitHealthy polls /health on the mapped port at each candidate host
// until one answers 200. The candidates are testcontainers' docker host
// and localhost: testcontainers guesses the docker bridge gateway when it
// runs inside a container, which is wrong when the daemon runs in that
// same container.
func (c *Container) waitHealthy(ctx context.Context) error {
	port, err := c.MappedPort(ctx, ContainerPort)
	if err != nil {
		return fmt.Errorf("mapped port: %w", err)
	}
	hosts := []string{"localhost"}
	if h, err := c.Host(ctx); err == nil && h != "localhost" {
		hosts = append([]string{h}, hosts...)
	}
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		for _, h := range hosts {
			url := "http://" + net.JoinHostPort(h, port.Port())
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
			return fmt.Errorf("wait for /health on %v port %s: %w", hosts, port.Port(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RunContainer builds an image FROM scratch holding a static vllmstub
// binary (built from the module with `go build` unless WithBinary names
// one), starts it and waits until /health answers. Server options (WithProfile,
// WithProfileName, WithModel, WithTimeScale, WithSlowdown, WithBatchNoise,
// WithSpread, WithFaults, WithDevMode, WithTransportAllowance) become
// vllmstub flags; WithReplay and WithAdjust cannot cross into a container
// and are refused (errors.ErrUnsupported; use WithReplayFile). Other
// testcontainers customizers are applied last, so they win. Nothing is
// pulled, and no reaper is needed: TESTCONTAINERS_RYUK_DISABLED=true is
// honoured. As in testcontainers modules, a container that started is
// returned with the error, for cleanup.
func RunContainer(ctx context.Context, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	noReaper()
	cfg := defaultConfig()
	var co containerOptions
	var rest []testcontainers.ContainerCustomizer
	for _, o := range opts {
		switch o := o.(type) {
		case Option:
			if err := o(&cfg); err != nil {
				return nil, fmt.Errorf("run vllmstub container: %w", err)
			}
		case ContainerOption:
			if err := o(&co); err != nil {
				return nil, fmt.Errorf("run vllmstub container: %w", err)
			}
		default:
			rest = append(rest, o)
		}
	}
	args, err := cfg.flags()
	if err != nil {
		return nil, fmt.Errorf("run vllmstub container: %w", err)
	}
	dir, err := os.MkdirTemp("", "vllmstub-image-")
	if err != nil {
		return nil, fmt.Errorf("run vllmstub container: %w", err)
	}
	defer os.RemoveAll(dir)
	module := co.moduleDir
	if module == "" {
		if module, err = moduleRoot(ctx); err != nil {
			return nil, fmt.Errorf("run vllmstub container: %w", err)
		}
	}
	bin := co.binary
	if bin == "" {
		bin = filepath.Join(dir, "vllmstub")
		if err := BuildBinary(ctx, module, bin); err != nil {
			return nil, fmt.Errorf("run vllmstub container: %w", err)
		}
	} else if err := copyFile(bin, filepath.Join(dir, "vllmstub")); err != nil {
		return nil, fmt.Errorf("run vllmstub container: %w", err)
	}
	if err := copyFile(filepath.Join(module, "cmd", "vllmstub", "Dockerfile"), filepath.Join(dir, "Dockerfile")); err != nil {
		return nil, fmt.Errorf("run vllmstub container: %w", err)
	}
	custom := []testcontainers.ContainerCustomizer{
		testcontainers.WithDockerfile(testcontainers.FromDockerfile{Context: dir, Dockerfile: "Dockerfile"}),
		testcontainers.WithExposedPorts(ContainerPort),
		testcontainers.WithCmdArgs(args...),
	}
	if cfg.devMode {
		custom = append(custom, testcontainers.WithEnv(map[string]string{"VLLM_SERVER_DEV_MODE": "1"}))
	}
	if co.replayFile != "" {
		custom = append(custom,
			testcontainers.WithFiles(testcontainers.ContainerFile{HostFilePath: co.replayFile, ContainerFilePath: "/replay.json", FileMode: 0o444}),
			testcontainers.WithCmdArgs("--replay", "/replay.json"))
	}
	ctr, err := testcontainers.Run(ctx, "", append(custom, rest...)...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr, Binary: bin}
	}
	if err != nil {
		return c, fmt.Errorf("run vllmstub container: %w", err)
	}
	if err := c.waitHealthy(ctx); err != nil {
		return c, fmt.Errorf("run vllmstub container: %w", err)
	}
	return c, nil
}

// flags turns a server config into vllmstub flags.
func (c config) flags() ([]string, error) {
	if c.replay != nil {
		return nil, fmt.Errorf("WithReplay cannot reach a container, use WithReplayFile: %w", errors.ErrUnsupported)
	}
	if c.adjust != nil {
		return nil, fmt.Errorf("WithAdjust cannot reach a container: %w", errors.ErrUnsupported)
	}
	prof, err := json.Marshal(c.profile)
	if err != nil {
		return nil, fmt.Errorf("encode profile: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args := []string{"--profile-json", string(prof), "--time-scale", f(c.timeScale), "--slowdown", f(c.slowdown),
		"--batch-noise", f(c.batchNoise), "--answer-spread", f(c.spread.Confident) + "," + f(c.spread.NearTie),
		"--transport-allowance", c.allowance.String()}
	if c.model != "" {
		args = append(args, "--served-model-name", c.model)
	}
	for _, ft := range c.faults {
		args = append(args, "--fault", ft.String())
	}
	return args, nil
}

// BuildBinary builds a static linux vllmstub (CGO_ENABLED=0) for the
// Docker host's architecture from the vetbench module at moduleDir.
func BuildBinary(ctx context.Context, moduleDir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, "./cmd/vllmstub")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/vllmstub: %w: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}

// moduleRoot finds the module root with `go env GOMOD`.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module: cannot find cmd/vllmstub to build (use WithModuleDir or WithBinary)")
	}
	return filepath.Dir(mod), nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// defaultConfig is New's defaults.
func defaultConfig() config {
	return config{profile: ProfileFast(), timeScale: 1, slowdown: 1, batchNoise: DefaultBatchNoise, spread: DefaultSpread}
}

// DockerAvailable reports whether a Docker daemon answers, without
// starting anything: nil when RunContainer can run.
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
// TESTCONTAINERS_RYUK_DISABLED: the reaper is an image to pull, and the
// machines vetbench runs on may reach no registry; the twin's container is
// terminated by its owner (Target.Close, t.Cleanup) instead. testcontainers
// reads its configuration from the environment once, at first use, so this
// must run before any testcontainers call.
func noReaper() {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}
