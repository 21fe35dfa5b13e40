package metrics

import "testing"

func TestHostAllowed(t *testing.T) {
	names := ServerOptions{Addr: "status.example.com:9090", Hosts: []string{"Proxy.Example.Com."}}.hostNames()
	for host, want := range map[string]bool{
		"127.0.0.1:9090": true, "[::1]:9090": true, "10.1.2.3": true, "localhost:9090": true, "LOCALHOST.": true,
		"status.example.com:9090": true, "proxy.example.com": true, "PROXY.example.com:443": true,
		"rebind.example:9090": false, "localhost.rebind.example": false, "": false, "status.example.com.evil": false,
	} {
		if got := hostAllowed(host, names); got != want {
			t.Errorf("Host %q: %t, want %t", host, got, want)
		}
	}
}
