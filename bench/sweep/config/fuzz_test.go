package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzRunFile feeds arbitrary run files (TOML) through what File does —
// the nesting pre-scan, the parser, every setting's parser — and then
// through the checks Load makes. It must never panic or take long (the
// pre-scan keeps nesting, which made the parser quadratic, under its
// limit), every error must name the file, and a file that loads must
// write a settings.toml that loads again to the same settings. Seeds: the
// sample run file's shapes, deep nesting, the stream budget. Inputs stay
// small (≤ 4 KiB) so the fuzzer spends its time on shapes:
//
//	go test ./bench/sweep/config -run '^$' -fuzz '^FuzzRunFile$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzRunFile(f *testing.F) {
	f.Add([]byte("levels = [1, 4]\n[twin]\nprofile = \"fast\"\ntime_scale = 10\n[stream]\nttft_budget = \"30s\"\nslowest_tpot = \"200ms\"\n"))
	f.Add([]byte("[matrix]\ncontexts = [\"8K\", \"1M\"]\nduration = \"3s\"\n[tokens]\nmax_failed = \"5%\"\n"))
	f.Add([]byte("a = " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n"))
	f.Add([]byte("x = {a = {b = {c = 1}}}\n[target]\nendpoint = \"http://u:pw@h:1\"\n"))
	f.Add([]byte("gpu_hourly_usd = nan\nmax_failed = inf\n[load]\nrate = [2.0, -1]\n"))
	const path = "fuzz.toml"
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			t.Skip("long inputs add no shapes")
		}
		values, err := parseFile(path, data)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		c := Default()
		err = errors.Join(applyFile(&c, path, values), checkLoad(&c))
		if err != nil {
			if !strings.Contains(err.Error(), path) && !strings.Contains(err.Error(), "=") {
				t.Fatalf("an error that names neither the file nor the setting: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := WriteSettings(&out, c); err != nil {
			t.Fatalf("a loaded file's settings do not write: %v", err)
		}
		again, err := parseFile("settings.toml", out.Bytes())
		if err != nil {
			t.Fatalf("settings.toml does not parse: %v\n%s", err, out.Bytes())
		}
		c2 := Default()
		if err := errors.Join(applyFile(&c2, path, again), checkLoad(&c2)); err != nil {
			t.Fatalf("settings.toml does not load: %v\n%s", err, out.Bytes())
		}
		var out2 bytes.Buffer
		if err := WriteSettings(&out2, c2); err != nil || !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatalf("settings.toml does not load to the same settings:\n%s\n---\n%s", out.Bytes(), out2.Bytes())
		}
	})
}
