package fleet

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/tqmon/tqmon/resident/transport"
)

// secureOptions turns a client's Security into nats.go's options, after
// checking that the token is not sent in clear: every server URL (urls
// may list several, comma-separated) is tls://, or sec.TLS is set (then
// nats.Secure makes every connection TLS, verified against its RootCAs,
// presenting its certificate for mutual TLS), or the host is loopback,
// or sec.Insecure. A tls:// URL without sec.TLS is verified against the
// system's roots (nats.go's default). This is the only place the fleet's
// clients are told about TLS.
func secureOptions(urls, token string, sec transport.Security) ([]nats.Option, error) {
	if sec.TLS != nil {
		return []nats.Option{nats.Secure(sec.TLS)}, nil
	}
	for _, raw := range strings.Split(urls, ",") {
		raw = strings.TrimSpace(raw)
		if !strings.Contains(raw, "://") {
			raw = "nats://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("fleet: NATS URL %q: %v", raw, err)
		}
		if u.Scheme == "tls" {
			continue
		}
		if err := sec.CheckClear("fleet: "+raw, u.Hostname(), token); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
