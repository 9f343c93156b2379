package container

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// WithExecutable builds the image from the executable at path instead of
// a vllmstub binary: args are what makes it serve the twin (for vetbench,
// "twin"), and the twin's flags follow them. path must be a static linux
// ELF for this machine's architecture (StaticELF): the image is FROM
// scratch, with no loader or libraries for a dynamically linked one.
func WithExecutable(path string, args ...string) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("WithExecutable: empty path")
		}
		o.binary, o.binArgs = path, append([]string{}, args...)
		return nil
	}
}

// WithOwnExecutable is WithExecutable of this process's own executable
// (os.Executable), for a program that serves the twin when run with args
// (`vetbench twin`), when that executable is a static ELF. When it is not
// (a cgo build, another OS), Run builds vllmstub from the module as it
// would without this option; when there is no module either (an installed
// binary outside a clone), Run's error says why neither can be the image.
// WithBinary and WithExecutable win over it.
func WithOwnExecutable(args ...string) Option {
	return func(o *options) error {
		o.own = append([]string{}, args...)
		return nil
	}
}

// StaticELF says why the file at path cannot be the only file of a FROM
// scratch linux image, or nil: it must be an ELF executable for linux on
// this machine's architecture (the Docker host's, as BuildBinary assumes)
// that the kernel runs by itself, with no program interpreter (PT_INTERP)
// and no shared libraries (DT_NEEDED), as a CGO_ENABLED=0 Go build is.
func StaticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable (the image runs linux; build with GOOS=linux): %w", path, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s is an ELF %v, not an executable", path, f.Type)
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return fmt.Errorf("%s is built for %v, not linux", path, f.OSABI)
	}
	if want, ok := machines[runtime.GOARCH]; ok && f.Machine != want {
		return fmt.Errorf("%s is built for %v, not this machine's %s (%v)", path, f.Machine, runtime.GOARCH, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(io.LimitReader(p.Open(), 4096))
			return fmt.Errorf("%s is dynamically linked (interpreter %s: a cgo build); a FROM scratch image needs a static executable: build with CGO_ENABLED=0 (make vetbench)",
				path, strings.TrimRight(string(interp), "\x00"))
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v; a FROM scratch image needs a static executable: build with CGO_ENABLED=0", path, libs)
	}
	return nil
}

// machines are the ELF machines of the architectures Go builds for linux.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "ppc64": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
	"loong64": elf.EM_LOONGARCH, "mips64le": elf.EM_MIPS, "mips64": elf.EM_MIPS, "mipsle": elf.EM_MIPS, "mips": elf.EM_MIPS,
}

// placeExecutable puts the executable the image holds into the build
// context dir and returns its name there and the arguments that make it
// serve the twin: WithBinary's or WithExecutable's file, else this
// process's own (WithOwnExecutable) when it is static, else vllmstub
// built from the module.
func (o options) placeExecutable(ctx context.Context, dir string) (name string, args []string, err error) {
	var ownWhy error
	if o.binary == "" && o.own != nil {
		exe, err := os.Executable()
		if err == nil {
			err = StaticELF(exe)
		}
		if err == nil {
			o.binary, o.binArgs = exe, o.own
		} else {
			ownWhy = fmt.Errorf("this program's executable cannot be the image: %w", err)
		}
	}
	if o.binary != "" {
		name, what := "vllmstub", "vllmstub binary"
		if o.binArgs != nil {
			name, what = imageName(o.binary), "twin executable"
		}
		if err := StaticELF(o.binary); err != nil {
			return "", nil, fmt.Errorf("%s: %w", what, err)
		}
		return name, o.binArgs, copyFile(o.binary, filepath.Join(dir, name))
	}
	module := o.moduleDir
	if module == "" {
		if module, err = moduleRoot(ctx); err != nil {
			if ownWhy != nil {
				return "", nil, fmt.Errorf("%w; %w", ownWhy, err)
			}
			return "", nil, err
		}
	}
	return "vllmstub", nil, BuildBinary(ctx, module, filepath.Join(dir, "vllmstub"))
}

// imageName is the executable's name in the image: its own when that is a
// plain file name, else "twin".
func imageName(path string) string {
	base := filepath.Base(path)
	if !regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`).MatchString(base) || base == "Dockerfile" {
		return "twin"
	}
	return base
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("twin executable: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return fmt.Errorf("twin executable: %w", err)
	}
	return dst.Close()
}

// dockerfileFor is the image's Dockerfile for the executable name run with
// args: the embedded Dockerfile's instructions (vllmstub's, for
// `docker build` by hand) with that executable's COPY and ENTRYPOINT.
func dockerfileFor(name string, args []string) []byte {
	if name == "vllmstub" && len(args) == 0 {
		return dockerfile
	}
	entry, _ := json.Marshal(append(append([]string{"/" + name}, args...), "--host", "0.0.0.0", "--port", strings.TrimSuffix(Port, "/tcp")))
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(dockerfile), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "COPY "):
			line = fmt.Sprintf("COPY %s /%s\n", name, name)
		case strings.HasPrefix(line, "ENTRYPOINT "):
			line = "ENTRYPOINT " + string(entry) + "\n"
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}
