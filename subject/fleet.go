package subject

import (
	"errors"
	"time"

	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/resident/transport"
)

// Served is a resident's sessions being served, over gRPC or NATS.
type served struct {
	drain func(time.Duration)
	stop  func()
	// failed receives the error that ended serving before stop (gRPC's
	// Serve returning); nil for a fleet member, whose connection's loss
	// the fleet server reports itself.
	failed <-chan error
}

// serveSessions serves ss: as host on the NATS server at natsURL when
// that is set (a client of it: tf's CA verifies the server, its
// certificate is presented for mutual TLS), else over gRPC at listen (a
// TCP listener needs token; tf's certificate secures it, its CA
// verifies clients). Serving errors in what was asked are badInput.
func serveSessions(ss transport.Sessions, listen, token, natsURL, host string, tf transport.TLSFiles, insecure bool, logf func(string, ...any)) (*served, error) {
	if natsURL != "" {
		if host == "" {
			return nil, badInput(errors.New("--nats needs --host NAME (this resident's name in the fleet)"))
		}
		if err := fleet.CheckHost(host); err != nil {
			return nil, badInput(err)
		}
		cfg, err := tf.ClientConfig()
		if err != nil {
			return nil, badInput(err)
		}
		nc, err := fleet.Connect(natsURL, token, "tqmon resident "+host, transport.Security{TLS: cfg, Insecure: insecure})
		if err != nil {
			return nil, err
		}
		srv, err := fleet.Join(nc, host, ss, fleet.Options{Logf: logf})
		if err != nil {
			nc.Close()
			if errors.Is(err, fleet.ErrHostTaken) {
				return nil, badInput(err)
			}
			return nil, err
		}
		return &served{drain: srv.Drain, stop: func() { srv.Stop(); nc.Close() }}, nil
	}
	cfg, err := tf.ServerConfig()
	if err != nil {
		return nil, badInput(err)
	}
	srv, err := transport.NewServer(ss, transport.ServerOptions{Token: token, Logf: logf, TLS: cfg})
	if err != nil {
		return nil, badInput(err)
	}
	if err := transport.CheckToken(listen, token); err != nil {
		return nil, badInput(err)
	}
	lis, err := transport.Listen(listen)
	if err != nil {
		return nil, badInput(err)
	}
	failed := make(chan error, 1)
	go func() {
		if err := srv.Serve(lis); err != nil {
			failed <- err
		}
	}()
	return &served{drain: srv.Drain, stop: srv.Stop, failed: failed}, nil
}
