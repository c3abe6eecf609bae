package main

import (
	"crypto/tls"

	"github.com/spf13/pflag"

	"github.com/tqmon/tqmon/resident/transport"
)

// tlsFlags are a command's TLS files (transport.TLSFiles: the same three
// flags on every command, their meaning following the command's side of
// the connection) and, on commands that send a token, --insecure.
type tlsFlags struct {
	files    transport.TLSFiles
	insecure bool
}

// The sides a command takes, for its flags' help.
const (
	tlsClient   = iota // query, shell, record: --connect, --nats
	tlsServer          // serve
	tlsResident        // resident, demo --subject: a server with --listen, a client with --nats
)

func addTLSFlags(fl *pflag.FlagSet, f *tlsFlags, side int) {
	switch side {
	case tlsClient:
		fl.StringVar(&f.files.CA, "tls-ca", "", "connect over TLS, verifying the server's certificate against the CA certificates (PEM) in FILE (tls:// NATS URLs use TLS anyway, with the system's CAs by default)")
		fl.StringVar(&f.files.Cert, "tls-cert", "", "with --tls-key: this client's certificate (PEM), for servers that require one (mutual TLS)")
		fl.StringVar(&f.files.Key, "tls-key", "", "with --tls-cert: this client's private key (PEM)")
	case tlsServer:
		fl.StringVar(&f.files.Cert, "tls-cert", "", "with --tls-key: serve TLS only (tls:// URLs) with this certificate (PEM)")
		fl.StringVar(&f.files.Key, "tls-key", "", "with --tls-cert: the certificate's private key (PEM)")
		fl.StringVar(&f.files.CA, "tls-ca", "", "with --tls-cert: accept only clients presenting a certificate these CAs (PEM) signed (mutual TLS); with --cluster, the CAs the nodes' certificates are verified against (default: the system's)")
	case tlsResident:
		fl.StringVar(&f.files.Cert, "tls-cert", "", "with --listen: serve TLS with this certificate (PEM, with --tls-key); with --nats: the certificate presented to a server that requires one (mutual TLS)")
		fl.StringVar(&f.files.Key, "tls-key", "", "the private key (PEM) of --tls-cert")
		fl.StringVar(&f.files.CA, "tls-ca", "", "with --listen: accept only monitors presenting a certificate these CAs (PEM) signed (mutual TLS); with --nats: verify the NATS server's certificate against them")
	}
	if side != tlsServer {
		fl.BoolVar(&f.insecure, "insecure", false, "send the token in clear to a server that is not on this machine (without TLS anyone on the path can read it)")
	}
}

// client is the Security a client connects with; a bad file is a usage
// error.
func (f *tlsFlags) client() (transport.Security, error) {
	cfg, err := f.files.ClientConfig()
	if err != nil {
		return transport.Security{}, usageErr(err)
	}
	return transport.Security{TLS: cfg, Insecure: f.insecure}, nil
}

// server is the configuration a server listens with (nil: plain); a
// bad file is a usage error.
func (f *tlsFlags) server() (*tls.Config, error) {
	cfg, err := f.files.ServerConfig()
	if err != nil {
		return nil, usageErr(err)
	}
	return cfg, nil
}
