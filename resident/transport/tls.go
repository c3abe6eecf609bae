package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// TLSFiles name the PEM files of one side of a TLS connection, as the
// flags --tls-cert, --tls-key and --tls-ca give them. The same three
// flags serve both sides; what they mean follows the side's role:
//
//   - A server (resident --listen, tqmon serve) presents Cert and Key,
//     and given CA it requires every client to present a certificate
//     that CA signed (mutual TLS).
//   - A client (query/record/shell --connect or --nats, a resident or
//     demo host joining with --nats) verifies the server's certificate
//     against CA (the system's roots when CA is not given), and presents
//     Cert and Key when given (mutual TLS).
//
// TLS secures the channel; it does not replace the token, which a
// server still checks (over TLS it no longer travels in clear).
type TLSFiles struct {
	Cert, Key string
	CA        string
}

// Given reports whether any TLS file is named.
func (f TLSFiles) Given() bool { return f.Cert != "" || f.Key != "" || f.CA != "" }

// ServerConfig is the configuration a server listens with: nil when no
// file is named (plain TCP). A server needs Cert and Key; CA turns on
// client verification.
func (f TLSFiles) ServerConfig() (*tls.Config, error) {
	if !f.Given() {
		return nil, nil
	}
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("a TLS server needs --tls-cert FILE and --tls-key FILE (its certificate and private key, PEM); --tls-ca alone only says which clients to accept")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := f.certificate(cfg); err != nil {
		return nil, err
	}
	if f.CA != "" {
		pool, err := caPool(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig is the configuration a client connects with: nil when no
// file is named. CA (else the system's roots) verifies the server; Cert
// and Key, given together, are presented for mutual TLS.
//
// Without Cert, a server that asks for a client certificate is refused
// by the client, in the handshake, with an error saying to give one:
// the servers tqmon speaks to ask only when they require one (a
// resident or tqmon serve given --tls-ca, nats-server's verify), and
// under TLS 1.3 the server's own refusal reaches the client after its
// handshake, often as a bare "broken pipe".
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	if !f.Given() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.Cert != "" || f.Key != "" {
		if err := f.certificate(cfg); err != nil {
			return nil, err
		}
	} else {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return nil, errNoClientCert
		}
	}
	if f.CA != "" {
		pool, err := caPool(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// certificate loads Cert and Key into cfg.
func (f TLSFiles) certificate(cfg *tls.Config) error {
	if f.Cert == "" || f.Key == "" {
		return errors.New("--tls-cert FILE and --tls-key FILE go together (a certificate and its private key, PEM)")
	}
	c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return fmt.Errorf("--tls-cert %s --tls-key %s: %w", f.Cert, f.Key, err)
	}
	cfg.Certificates = []tls.Certificate{c}
	return nil
}

// caPool reads the PEM certificates of file.
func caPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// errNoClientCert is a client's refusal of a server that requires a
// client certificate, when it has none.
var errNoClientCert = errors.New("the server requires a client certificate (mutual TLS): give --tls-cert FILE and --tls-key FILE, signed by a CA the server trusts")

// ErrInClear is what CheckClear's refusals wrap.
var ErrInClear = errors.New("refusing to send the token in clear")

// Security is how a client's connections are secured: TLS when non-nil
// (TLSFiles.ClientConfig), and Insecure (--insecure) when the user allows
// a token in clear to a host that is not on this machine.
type Security struct {
	TLS      *tls.Config
	Insecure bool
}

// CheckClear refuses to send token in clear to host (a name or an
// address, no port): allowed when there is no token, over TLS, to a
// loopback address ("localhost", 127.0.0.0/8, ::1), or with Insecure.
// Anything else would show the token to whoever is on the path.
func (s Security) CheckClear(what, host, token string) error {
	if token == "" || s.TLS != nil || s.Insecure || Loopback(host) {
		return nil
	}
	return fmt.Errorf("%s: %w to %s, which is not this machine: "+
		"use TLS (--tls-ca FILE, the CA that signed the server's certificate; the server needs --tls-cert and --tls-key), "+
		"or give --insecure to send it anyway (anyone on the path can read it)", what, ErrInClear, host)
}

// Loopback reports whether a connection to host (a name or an IP
// address) stays on this machine: "localhost", a loopback IP, or the
// unspecified address (0.0.0.0, ::), which a dial takes to this machine
// (a listener's address printed as [::]:PORT). Other names are not
// resolved: a name that resolves to loopback is still treated as remote.
func Loopback(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// TLSHint adds to a connection's error what to do when the error is a
// certificate the client could not verify; other errors are returned as
// they are. gRPC carries the handshake's error as text, so the text is
// what is read.
func TLSHint(err error) error {
	if err == nil {
		return nil
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	msg := err.Error()
	switch {
	case errors.As(err, &ua) || strings.Contains(msg, "certificate signed by unknown authority"):
		return fmt.Errorf("%w (the server's certificate is not signed by a CA this client trusts: give --tls-ca FILE, the CA that signed it)", err)
	case errors.As(err, &hn) || strings.Contains(msg, "x509: certificate is valid for"):
		return fmt.Errorf("%w (the server's certificate does not name the address dialled: connect by a name or address it holds)", err)
	case strings.Contains(msg, errNoClientCert.Error()):
		return err
	case strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate"):
		return fmt.Errorf("%w (the server requires a client certificate its CA signed: give --tls-cert FILE and --tls-key FILE)", err)
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return fmt.Errorf("%w (the server does not speak TLS: drop --tls-* or start the server with --tls-cert and --tls-key)", err)
	case strings.Contains(msg, "error reading server preface: EOF"):
		return fmt.Errorf("%w (the server closed the connection at once: if it serves TLS, give --tls-ca FILE)", err)
	case strings.Contains(msg, "secure connection not available"):
		return fmt.Errorf("%w (the NATS server does not serve TLS: connect to nats://HOST:PORT without --tls-*, or start it with --tls-cert and --tls-key)", err)
	}
	return err
}
