package netlab

import "testing"

func TestNetstatCounter(t *testing.T) {
	const text = "TcpExt: SyncookiesSent TCPMD5NotFound TCPMD5Failure\nTcpExt: 0 7 3\nIpExt: InNoRoutes\nIpExt: 5\n"
	for name, want := range map[string]int{"TCPMD5NotFound": 7, "TCPMD5Failure": 3, "InNoRoutes": 5} {
		if got, err := netstatCounter(text, name); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", name, got, err, want)
		}
	}
	if _, err := netstatCounter(text, "TCPMD5Unexpected"); err == nil {
		t.Error("a counter that is not there: no error")
	}
}
