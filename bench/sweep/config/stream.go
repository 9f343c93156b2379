package config

import (
	"errors"
	"strings"
	"time"
)

// Stream bounds every streamed request of the token benchmark and the
// matrix, besides the idle timeout (RequestTimeout, reset by every byte):
// a stream of max_tokens must end within TTFTBudget + max_tokens ×
// SlowestTPOT of being sent, whatever keeps it alive meanwhile.
type Stream struct {
	// TTFTBudget is the time a stream may take to its first token.
	TTFTBudget time.Duration
	// SlowestTPOT is the slowest time per output token accepted.
	SlowestTPOT time.Duration
}

// Stream variables.
const (
	EnvStreamTTFTBudget  = "VETBENCH_STREAM_TTFT_BUDGET"
	EnvStreamSlowestTPOT = "VETBENCH_STREAM_SLOWEST_TPOT"
)

// Stream defaults: a first token within two minutes (the default request
// timeout), no output token slower than 500 ms (2 tok/s a stream; bench/
// stream.DefaultBudget says the same).
var (
	DefaultStreamTTFTBudget  = 120 * time.Second
	DefaultStreamSlowestTPOT = 500 * time.Millisecond
)

func defaultStream() Stream {
	return Stream{TTFTBudget: DefaultStreamTTFTBudget, SlowestTPOT: DefaultStreamSlowestTPOT}
}

func streamSettings() []setting {
	both := []Scope{ScopeTokens, ScopeMatrix}
	positive := func(field func(*Stream) *time.Duration, example string) func(*Config, string) error {
		return func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				return errors.New("want a positive duration such as " + example)
			}
			*field(&c.Stream) = d
			return nil
		}
	}
	return []setting{
		{env: EnvStreamTTFTBudget, flag: "ttft-budget", key: "stream.ttft_budget", scopes: both,
			def:   DefaultStreamTTFTBudget.String(),
			usage: "a stream's `time` to its first token; with -slowest-tpot its deadline: ttft-budget + output × slowest-tpot (" + EnvStreamTTFTBudget + ")",
			show:  func(c *Config) string { return tomlString(c.Stream.TTFTBudget.String()) },
			set:   positive(func(s *Stream) *time.Duration { return &s.TTFTBudget }, "120s")},
		{env: EnvStreamSlowestTPOT, flag: "slowest-tpot", key: "stream.slowest_tpot", scopes: both,
			def:   DefaultStreamSlowestTPOT.String(),
			usage: "slowest `time` per output token a stream may take before it fails as deadline (" + EnvStreamSlowestTPOT + ")",
			show:  func(c *Config) string { return tomlString(c.Stream.SlowestTPOT.String()) },
			set:   positive(func(s *Stream) *time.Duration { return &s.SlowestTPOT }, "500ms")},
	}
}
