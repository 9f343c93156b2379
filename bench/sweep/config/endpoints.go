package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/judgments"
)

// MaxReplicas bounds VETBENCH_STUB_REPLICAS: each twin is a server (or a
// container) of its own.
const MaxReplicas = 16

// setEndpoints reads VETBENCH_ENDPOINT: one base URL, or several separated
// by commas (a list in the run file), each checked as one. Several are
// replicas serving one model: the judgments are spread over them.
func setEndpoints(c *Config, v string) error {
	var urls []string
	for i, part := range strings.Split(v, ",") {
		u, err := baseURL(part)
		if err != nil {
			if strings.Contains(v, ",") {
				return fmt.Errorf("URL %d (%s): %w", i+1, judgments.RedactURL(strings.TrimSpace(part)), err)
			}
			return err
		}
		if slices.Contains(urls, u) {
			return fmt.Errorf("URL %d (%s) is given twice: one server measured as two would count its requests twice", i+1, u)
		}
		urls = append(urls, u)
	}
	c.Target.Endpoint, c.Target.Replicas = urls[0], urls[1:]
	if len(c.Target.Replicas) == 0 {
		c.Target.Replicas = nil
	}
	return nil
}

// baseURL checks one base URL: http(s), a host, no credentials, no query.
func baseURL(v string) (string, error) {
	v = strings.TrimRight(strings.TrimSpace(v), "/")
	// url.Parse's error quotes the URL: never shown.
	u, err := url.Parse(v)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", errors.New("want a base URL such as http://gpu-box:8000")
	case u.User != nil:
		return "", fmt.Errorf("a base URL holds no credentials: give the key in %s", EnvAPIKey)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		// Paths are appended to the base URL: a query would swallow
		// them (…/?token=x/v1/models), and a token there belongs in
		// the key.
		return "", fmt.Errorf("a base URL has no query or fragment (a token goes in %s)", EnvAPIKey)
	}
	return v, nil
}

// redactURLs is a comma-separated list of URLs fit for a message.
func redactURLs(v string) string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = judgments.RedactURL(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}
