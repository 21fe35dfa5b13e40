package tlsconf

import (
	"bytes"
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"
)

// serverSerial dials addr with cfg and returns the serial of the
// certificate the server presented.
func serverSerial(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestDevAndReload(t *testing.T) {
	dir := t.TempDir()
	o, err := Dev(dir, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	ca1, _ := os.ReadFile(o.CAFile)
	cert1, _ := os.ReadFile(o.CertFile)
	if fi, err := os.Stat(o.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v: want mode 0600", fi.Mode(), err)
	}
	// A second run keeps valid files.
	if _, err := Dev(dir, []string{"localhost"}); err != nil {
		t.Fatal(err)
	}
	if cert, _ := os.ReadFile(o.CertFile); !bytes.Equal(cert, cert1) {
		t.Fatal("a valid certificate was made again")
	}

	srvCfg, err := Server(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := tls.Listen("tcp", "127.0.0.1:0", srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) { _ = c.(*tls.Conn).Handshake(); c.Close() }(c)
		}
	}()
	cli, err := Client(o.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	first := serverSerial(t, lis.Addr().String(), cli)

	// A host the certificate does not name: a new one from the same CA,
	// which the running listener picks up.
	if _, err := Dev(dir, []string{"127.0.0.1", "icefloe.test"}); err != nil {
		t.Fatal(err)
	}
	if ca, _ := os.ReadFile(o.CAFile); !bytes.Equal(ca, ca1) {
		t.Fatal("the CA was made again")
	}
	time.Sleep(reloadEvery + 100*time.Millisecond)
	if second := serverSerial(t, lis.Addr().String(), cli); second == first {
		t.Fatal("the listener kept the old certificate")
	}

	// A client trusting only the system roots refuses the dev CA.
	if c, err := tls.Dial("tcp", lis.Addr().String(), &tls.Config{MinVersion: tls.VersionTLS12}); err == nil {
		c.Close()
		t.Fatal("an unknown CA was trusted")
	}
	if _, err := Client(o.KeyFile); err == nil {
		t.Error("a key file was taken for a CA file")
	}
}
