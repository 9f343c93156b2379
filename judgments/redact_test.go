package judgments

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://gpu-box:8000", "http://gpu-box:8000"},
		{"http://user:pass@gpu-box:8000/v1", "http://xxxxx@gpu-box:8000/v1"},
		{"https://TOKEN@gpu-box/", "https://xxxxx@gpu-box/"},
		{"http://gpu-box/?token=SECRET/v1/models", "http://gpu-box/?xxxxx"},
		{"http://gpu-box/v1#frag", "http://gpu-box/v1"},
		// Malformed: redacted by shape, never echoed.
		{"http://user:pass@gpu-box:port", "http://xxxxx@gpu-box:port"},
		{"user:pass@gpu-box", "xxxxx@gpu-box"},
		{"http://u:p@h:bad/x?token=SECRET", "http://xxxxx@h:bad/x?xxxxx"},
		{"::bad?token=SECRET", "::bad?xxxxx"},
	} {
		got := RedactURL(tc.in)
		require.Equal(t, tc.want, got, tc.in)
		for _, secret := range []string{"pass", "SECRET", "TOKEN", "frag"} {
			require.NotContains(t, got, secret)
		}
	}
}

// A client error carries the URL net/http put in it: the user name and the
// query survive net/http's own redaction (it hides only the password), so
// the client redacts them.
func TestClientErrorsRedacted(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	base := "http://USERSECRET:PASSSECRET@" + addr + "/?token=QUERYSECRET"
	cl := NewClient(base, WithAPIKey("KEYSECRET"))
	_, err = cl.Tokenize(context.Background(), []string{"yes"})
	require.Error(t, err)
	for _, s := range []string{"USERSECRET", "PASSSECRET", "QUERYSECRET", "KEYSECRET"} {
		require.NotContains(t, err.Error(), s)
	}
	require.Contains(t, err.Error(), "xxxxx@")
	// Positive control: net/http's own error holds the user name and the
	// query (it hides only the password).
	res, err := cl.http.Get(base + "/tokenize")
	if res != nil {
		res.Body.Close()
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "USERSECRET")
	require.Contains(t, err.Error(), "QUERYSECRET")
}
