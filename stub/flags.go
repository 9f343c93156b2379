package stub

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// defaultConfig is New's defaults.
func defaultConfig() config {
	return config{profile: ProfileFast(), timeScale: 1, slowdown: 1, batchNoise: DefaultBatchNoise, spread: DefaultSpread}
}

// Flags turns server options into the command line and environment that
// make the vllmstub binary serve what New(opts...) would: the whole
// profile as --profile-json, the twin's own flags, and
// VLLM_SERVER_DEV_MODE=1 for WithDevMode(true) (vLLM reads dev mode from
// the environment, and so does vllmstub), and VLLM_API_KEY for WithAPIKey. WithReplay and WithAdjust hold
// values no command line can carry and are refused (errors.ErrUnsupported):
// a replay crosses as a file (vllmstub --replay), an adjust hook not at
// all. It is how stub/container starts the twin in a container.
func Flags(opts ...Option) (args []string, env map[string]string, err error) {
	c := defaultConfig()
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, nil, fmt.Errorf("stub: %w", err)
		}
	}
	if err := c.profile.Validate(); err != nil {
		return nil, nil, fmt.Errorf("stub: %w", err)
	}
	if c.replay != nil {
		return nil, nil, fmt.Errorf("stub: WithReplay cannot reach another process; pass the receipt file to vllmstub --replay: %w", errors.ErrUnsupported)
	}
	if c.adjust != nil {
		return nil, nil, fmt.Errorf("stub: WithAdjust cannot reach another process: %w", errors.ErrUnsupported)
	}
	prof, err := json.Marshal(c.profile)
	if err != nil {
		return nil, nil, fmt.Errorf("stub: encode profile: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	args = []string{"--profile-json", string(prof), "--time-scale", f(c.timeScale), "--slowdown", f(c.slowdown),
		"--batch-noise", f(c.batchNoise), "--answer-spread", f(c.spread.Confident) + "," + f(c.spread.NearTie),
		"--transport-allowance", c.allowance.String()}
	if c.model != "" {
		args = append(args, "--served-model-name", c.model)
	}
	for _, ft := range c.faults {
		args = append(args, "--fault", ft.String())
	}
	v := c.vllm
	if v.offFormat > 0 {
		args = append(args, "--off-format-share", f(v.offFormat))
	}
	if v.legacy {
		args = append(args, "--legacy-server")
	}
	if v.promptTokensDetails {
		args = append(args, "--enable-prompt-tokens-details")
	}
	if v.dataParallel > 1 {
		args = append(args, "--data-parallel-size", strconv.Itoa(v.dataParallel))
	}
	env = map[string]string{}
	if c.devMode {
		env["VLLM_SERVER_DEV_MODE"] = "1"
	}
	if len(v.apiKeys) > 0 {
		// vllm serve reads VLLM_API_KEY too; a key in the environment stays
		// out of the command line (and of `docker inspect`'s Cmd).
		env["VLLM_API_KEY"] = strings.Join(v.apiKeys, ",")
	}
	return args, env, nil
}
