package config

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// Several endpoints: comma-separated in the environment, a list in the run
// file, each checked as one URL, written back as a list.
func TestSeveralEndpoints(t *testing.T) {
	c, err := Load(Env(env(map[string]string{EnvEndpoint: " http://gpu-a:8000/, http://gpu-b:8000,https://gpu-c "})))
	require.NoError(t, err)
	require.Equal(t, "http://gpu-a:8000", c.Target.Endpoint)
	require.Equal(t, []string{"http://gpu-b:8000", "https://gpu-c"}, c.Target.Replicas)
	require.Equal(t, []string{"http://gpu-a:8000", "http://gpu-b:8000", "https://gpu-c"}, c.Target.Endpoints())

	var b bytes.Buffer
	require.NoError(t, WriteSettings(&b, c))
	require.Contains(t, b.String(), `endpoint = ["http://gpu-a:8000", "http://gpu-b:8000", "https://gpu-c"]`)
	got, err := Load(File(writeRunFile(t, b.String())))
	require.NoError(t, err)
	require.Equal(t, c.Target, got.Target)

	// One endpoint stays one (no replicas), written as a string.
	c, err = Load(Env(env(map[string]string{EnvEndpoint: "http://gpu-a:8000"})))
	require.NoError(t, err)
	require.Nil(t, c.Target.Replicas)
	b.Reset()
	require.NoError(t, WriteSettings(&b, c))
	require.Contains(t, b.String(), `endpoint = "http://gpu-a:8000"`)

	// Twins: how many to start.
	c, err = Load(Env(env(map[string]string{EnvStubReplicas: "3"})))
	require.NoError(t, err)
	require.Equal(t, 3, c.Twin.Replicas)
	require.Nil(t, c.Target.Endpoints(), "no endpoint: the twin")
}

func TestSeveralEndpointsRefused(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{"credentials in the second", "http://gpu-a:8000,http://u:sk-secret@gpu-b:8000", `URL 2 (http://xxxxx@gpu-b:8000): a base URL holds no credentials`},
		{"query in the third", "http://a,http://b,http://c/?token=sk-secret", `URL 3 (http://c/?xxxxx): a base URL has no query`},
		{"empty element", "http://gpu-a:8000,,http://gpu-b:8000", "URL 2 (): want a base URL"},
		{"twice", "http://gpu-a:8000,http://gpu-a:8000/", "URL 2 (http://gpu-a:8000) is given twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Env(env(map[string]string{EnvEndpoint: tt.value})))
			require.ErrorContains(t, err, EnvEndpoint)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "sk-secret", "a secret is never echoed")
		})
	}
	// The run file's list: the same checks, the element named.
	_, err := Load(File(writeRunFile(t, "[target]\nendpoint = [\"http://a:1\", \"http://u:sk-secret@b:1\"]\n")))
	require.ErrorContains(t, err, "URL 2 (http://xxxxx@b:1): a base URL holds no credentials")
	require.NotContains(t, err.Error(), "sk-secret")

	for _, v := range []string{"0", "17", "x"} {
		_, err := Load(Env(env(map[string]string{EnvStubReplicas: v})))
		require.ErrorContains(t, err, EnvStubReplicas)
	}
}
