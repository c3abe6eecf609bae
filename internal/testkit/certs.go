package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are the PEM files of a throwaway certificate authority made for
// one test (nothing is committed): a server certificate for localhost,
// 127.0.0.1 and ::1 (good for client authentication too, as a cluster
// node's, which dials the other nodes' routes with it), a client
// certificate, both signed by CA, and a second authority, OtherCA, that
// signed neither but signed OtherServerCert, the same server's
// certificate from another authority.
type Certs struct {
	CA, OtherCA                     string
	ServerCert, ServerKey           string
	ClientCert, ClientKey           string
	OtherServerCert, OtherServerKey string
}

// NewCerts makes a Certs in a temporary directory of t's.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{}
	var caCert *x509.Certificate
	var caKey *ecdsa.PrivateKey
	caCert, caKey, c.CA = authority(t, dir, "ca")
	otherCert, otherKey, other := authority(t, dir, "other-ca")
	c.OtherCA = other
	server := func() *x509.Certificate {
		return &x509.Certificate{
			DNSNames:    []string{"localhost"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
	}
	c.ServerCert, c.ServerKey = leaf(t, dir, "server", caCert, caKey, server())
	c.OtherServerCert, c.OtherServerKey = leaf(t, dir, "other-server", otherCert, otherKey, server())
	c.ClientCert, c.ClientKey = leaf(t, dir, "client", caCert, caKey, &x509.Certificate{
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serialNumber(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// authority makes a self-signed CA and writes its certificate as
// dir/name.pem.
func authority(t testing.TB, dir, name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(t),
		Subject:               pkix.Name{CommonName: "tqmon test " + name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".pem")
	writePEM(t, path, "CERTIFICATE", der)
	return cert, key, path
}

// leaf makes a certificate from tmpl signed by ca, and writes it and its
// key as dir/name.pem and dir/name-key.pem.
func leaf(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certPath, keyPath string) {
	key := newKey(t)
	tmpl.SerialNumber = serialNumber(t)
	tmpl.Subject = pkix.Name{CommonName: "tqmon test " + name}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "PRIVATE KEY", kder)
	return certPath, keyPath
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
