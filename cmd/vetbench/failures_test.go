package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// runCtx is runWith under ctx.
func runCtx(ctx context.Context, environ map[string]string, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] }}
	code = vetbench(ctx, e, args)
	return out.String(), errb.String(), code
}

// The engine dies after 20 requests, the run continues past the errors:
// the line says how many failed, the receipt counts them by class, the
// benchmark line in bench.txt has them as failed-items, the run exits 1
// and measures no point (and no pass of -count) after the engine died (no
// receipt of c=4, none in pass2). Control: the same run with the failures
// accepted passes... only where the accepted share covers them.
func TestRunEngineDeadContinue(t *testing.T) {
	dir := t.TempDir()
	environ := map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_FIXTURE_SIZE": "2", "VETBENCH_SETS": "checks",
		"VETBENCH_STUB_FAULTS": "engine-dead:after=20", "VETBENCH_CONTINUE_ON_ERROR": "1", "VETBENCH_LEVELS": "1,4"}
	stdout, stderr, code := runWith(t, environ, "run", "-out", dir, "-count", "2")
	require.Equal(t, exitFail, code, stdout+stderr)
	// 20 healthy chat requests: the capability check (one request, before
	// any point), 4 of the warmup judgment, then 3 judgments of 4 questions
	// and 3 questions of the fourth; the other 11 of the 14 items fail.
	require.Contains(t, stdout, "n=3  failed 11  discarded 0 (11 http_500)")
	require.Contains(t, stdout, "warning: the run continued past failures (VETBENCH_CONTINUE_ON_ERROR): 11 of 14 judgments failed")
	require.Contains(t, stderr, "11 of 14 judgments failed (11 http_500), more than the accepted 0% (VETBENCH_MAX_FAILED)")
	require.Contains(t, stderr, "server down: engine dead")
	require.Contains(t, stderr, "no later point is measured")
	rec, err := receipts.ReadFile(filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NoError(t, err)
	require.Equal(t, 11, rec.Throughput.Failed)
	require.Equal(t, map[string]int{"http_500": 11}, rec.Throughput.FailedByClass)
	require.NoFileExists(t, filepath.Join(dir, "receipts", "checks_c4.json"), "no receipt after the engine died")
	require.NoDirExists(t, filepath.Join(dir, "receipts", "pass2"), "no pass after the engine died")
	bench, err := os.ReadFile(filepath.Join(dir, "bench.txt"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^BenchmarkJudgments/set=checks/c=1(-\d+)?\s.*\s11\.00 failed-items`, string(bench))
	require.NotContains(t, string(bench), "c=4")
	require.True(t, strings.HasSuffix(string(bench), "\nFAIL\n"), string(bench))

	// A share that covers the failures passes the point; the dead engine
	// still ends the run, with 1.
	environ["VETBENCH_MAX_FAILED"] = "0.8"
	stdout, stderr, code = runWith(t, environ, "run", "-out", t.TempDir())
	require.Equal(t, exitFail, code)
	require.Contains(t, stdout, "within the accepted 80% (VETBENCH_MAX_FAILED)")
	require.Contains(t, stderr, "server down")
	require.NotContains(t, stderr, "FAILED:")

	// Control: a share that covers occasional failures on a live engine
	// passes the run (exit 0), and the line still shows them.
	environ["VETBENCH_STUB_FAULTS"] = "http500:match=|r00:unsigned|"
	environ["VETBENCH_MAX_FAILED"] = "10%"
	stdout, stderr, code = runWith(t, environ, "run", "-out", t.TempDir())
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "failed 1  discarded 0 (1 http_500)")
	delete(environ, "VETBENCH_MAX_FAILED")
	_, _, code = runWith(t, environ, "run", "-out", t.TempDir())
	require.Equal(t, exitFail, code, "without the accepted share the same run fails")
}

// freezer fronts a twin and, once frozen, holds every request unanswered
// (a SIGSTOPped server): after the chat request numbered at.
func freezer(t *testing.T, at int64) (base string, frozen *atomic.Bool) {
	t.Helper()
	rs, err := stub.Start(stub.Config{DevMode: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rs.Close() })
	u, err := url.Parse(rs.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	frozen = &atomic.Bool{}
	var chats atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") && chats.Add(1) == at {
			frozen.Store(true)
		}
		if frozen.Load() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL, frozen
}

// A server that freezes mid-run, with VETBENCH_TIMEOUT short: the run
// ends (no wall-clock figure: that it returns), writes what it measured,
// says the server is down and exits 1.
func TestRunFrozenServer(t *testing.T) {
	base, _ := freezer(t, 1+4*5+1) // the capability check and 5 judgments answer; the next hangs
	dir := t.TempDir()
	environ := map[string]string{"VETBENCH_ENDPOINT": base, "VETBENCH_FIXTURE_SIZE": "2", "VETBENCH_SETS": "checks",
		"VETBENCH_TIMEOUT": "300ms", "VETBENCH_LEVELS": "1,4", "VETBENCH_WARMUP": "0"}
	stdout, stderr, code := runWith(t, environ, "run", "-out", dir, "-warmup", "0")
	require.Equal(t, exitFail, code, stdout+stderr)
	require.Contains(t, stdout, "STOPPED at r00:unsigned (timeout)")
	require.Contains(t, stderr, "server down: timeout")
	rec, err := receipts.ReadFile(filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NoError(t, err)
	require.Equal(t, 5, rec.Throughput.Judgments)
	require.Equal(t, "timeout", rec.Stopped.ErrorClass)
	require.NoFileExists(t, filepath.Join(dir, "receipts", "checks_c4.json"))
}

// Ctrl-C while the target is probed (here: a server that never answers) is
// an interrupt, exit 130, never "unreachable" (2).
func TestRunInterruptDuringProbe(t *testing.T) {
	asked := make(chan struct{}, 1)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(func() { close(hang); srv.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-asked; cancel() }()
	_, stderr, code := runCtx(ctx, map[string]string{"VETBENCH_ENDPOINT": srv.URL, "VETBENCH_SETS": "checks", "VETBENCH_FIXTURE_SIZE": "1"}, "run", "-out", t.TempDir())
	require.Equal(t, exitInterrupted, code, stderr)
	require.Contains(t, stderr, "vetbench run: interrupted")

	// Control: the same server, not interrupted, is unreachable in time: 2.
	_, stderr, code = runCtx(t.Context(), map[string]string{"VETBENCH_ENDPOINT": srv.URL, "VETBENCH_SETS": "checks", "VETBENCH_FIXTURE_SIZE": "1",
		"VETBENCH_TIMEOUT": "200ms"}, "run", "-out", t.TempDir())
	require.Equal(t, exitNoVerdict, code, stderr)
	require.NotContains(t, stderr, "interrupted")
}

// Secrets in the API key, in an endpoint's user info and in its query
// never reach stdout, stderr or any file written, whether the run is
// refused or runs and fails (a server that answers 401-free 500s and dies,
// so error texts are printed and recorded).
func TestRunLeaksNoSecrets(t *testing.T) {
	const key, user, pass, token = "KEYSECRET1", "USERSECRET2", "PASSSECRET3", "QUERYSECRET4"
	secrets := []string{key, user, pass, token}
	rs, err := stub.Start(stub.Config{DevMode: true, Faults: []stub.Fault{mustFault(t, "http500:every=7"), mustFault(t, "engine-dead:after=30")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rs.Close() })
	hostport := strings.TrimPrefix(rs.URL(), "http://")

	var out strings.Builder
	dir := t.TempDir()
	for _, endpoint := range []string{
		"http://" + user + ":" + pass + "@" + hostport,        // refused: credentials
		"http://" + hostport + "/?token=" + token,             // refused: a query
		"http://" + user + ":" + pass + "@" + hostport + ":x", // malformed
		user + ":" + pass + "@" + hostport,                    // no scheme
		rs.URL(),                                              // runs, with the key
	} {
		environ := map[string]string{"VETBENCH_ENDPOINT": endpoint, "VETBENCH_API_KEY": key, "VETBENCH_SETS": "checks",
			"VETBENCH_FIXTURE_SIZE": "2", "VETBENCH_LEVELS": "1,4", "VETBENCH_CONTINUE_ON_ERROR": "1"}
		stdout, stderr, code := runWith(t, environ, "run", "-out", dir)
		require.NotEqual(t, exitPass, code)
		out.WriteString(stdout + stderr)
	}
	// The gate's -run targets are refused the same way.
	for _, target := range []string{"http://" + user + ":" + pass + "@" + hostport, "http://" + hostport + "/?token=" + token} {
		stdout, stderr, code := run(t, "gate", "-run", "-json", target, "inprocess")
		require.Equal(t, exitNoVerdict, code)
		out.WriteString(stdout + stderr)
	}
	// A gate -run that runs, with the key, writes its sides' run
	// directories under the same dir (by now the twin's engine is dead:
	// the baseline fails, its errors are printed and recorded).
	gateEnv := map[string]string{"VETBENCH_API_KEY": key, "VETBENCH_SETS": "checks", "VETBENCH_FIXTURE_SIZE": "1", "VETBENCH_LEVELS": "1"}
	stdout, stderr, code := runWith(t, gateEnv, "gate", "-run", "-json", "-count", "1", "-out", filepath.Join(dir, "gate"), rs.URL(), "inprocess")
	require.Equal(t, exitNoVerdict, code, stdout+stderr)
	out.WriteString(stdout + stderr)
	all := out.String()
	require.Contains(t, all, "xxxxx", "the refusals show where a secret was")
	require.Contains(t, all, "http_500", "the run that ran printed its failures")
	// Every file of the run directory: receipts, bench.txt and
	// settings.toml (a run file meant to be copied: never a secret).
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		names = append(names, rel)
		data, err := os.ReadFile(path)
		all += string(data)
		return err
	}))
	for _, want := range []string{"settings.toml", "bench.txt", filepath.Join("receipts", "checks_c1.json"),
		filepath.Join("gate", "baseline", "settings.toml"), filepath.Join("gate", "candidate", "bench.txt")} {
		require.Contains(t, names, want)
	}
	for _, s := range secrets {
		if i := strings.Index(all, s); i >= 0 {
			t.Errorf("secret %s leaked: …%s…", s, all[max(i-80, 0):min(i+40, len(all))])
		}
	}
}

func mustFault(t *testing.T, spec string) stub.Fault {
	t.Helper()
	f, err := stub.ParseFault(spec)
	require.NoError(t, err)
	return f
}

// An interruption is said of the command it stopped, so that a twin
// container's own "interrupted" (vetbench twin, told to stop) does not read
// as the run's in its twin.log.
func TestCommandName(t *testing.T) {
	require.Equal(t, "vetbench twin", commandName([]string{"twin", "--profile", "fast"}))
	require.Equal(t, "vetbench run", commandName([]string{"run"}))
	require.Equal(t, "vetbench", commandName([]string{"-h"}))
	require.Equal(t, "vetbench", commandName(nil))
}
