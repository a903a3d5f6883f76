package plugin

import (
	"bufio"
	"strings"
	"testing"
)

// TestReadAnswer: the answers an HTTP/1.0 request can get, and what is
// not one.
func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		wantCode   int
		wantStatus string
		wantBody   string
		wantErr    string
	}{
		{name: "content length", in: "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{}\nignored",
			wantCode: 200, wantStatus: "200 OK", wantBody: "{}\n"},
		{name: "HTTP/1.1 status line", in: "HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n{}",
			wantCode: 409, wantStatus: "409 Conflict", wantBody: "{}"},
		{name: "body up to the end of the connection", in: "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n{\"ips\":[]}\n",
			wantCode: 200, wantStatus: "200 OK", wantBody: "{\"ips\":[]}\n"},
		{name: "no body", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", wantCode: 200, wantStatus: "200 OK"},
		{name: "body shorter than its length", in: "HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n{}", wantErr: "body"},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", wantErr: "Transfer-Encoding"},
		{name: "bad length", in: "HTTP/1.0 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: "Content-Length"},
		{name: "too long", in: "HTTP/1.0 200 OK\r\nContent-Length: 2000000\r\n\r\n", wantErr: "Content-Length"},
		{name: "not HTTP", in: "SSH-2.0-OpenSSH_9.2\r\n", wantErr: "not an HTTP answer"},
		{name: "no status code", in: "HTTP/1.0 OK\r\n\r\n", wantErr: "not an HTTP answer"},
		{name: "closed at once", in: "", wantErr: "reading the answer"},
		{name: "closed in the headers", in: "HTTP/1.0 200 OK\r\nContent-Le", wantErr: "headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body, err := readAnswer(bufio.NewReader(strings.NewReader(tc.in)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.code != tc.wantCode || st.text != tc.wantStatus || string(body) != tc.wantBody {
				t.Fatalf("got %d %q body %q, want %d %q body %q", st.code, st.text, body, tc.wantCode, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

// FuzzReadAnswer: whatever comes back on the socket, the plugin gets a
// status and a body within maxAnswer, or an error, never a panic.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n{}\n",
		"HTTP/1.1 503 Service Unavailable\r\n\r\n{\"code\":11,\"msg\":\"later\"}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.0 2",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		st, body, err := readAnswer(bufio.NewReader(strings.NewReader(in)))
		if err != nil {
			return
		}
		if st.code < 100 || len(body) > maxAnswer {
			t.Fatalf("status %d, %d bytes of body from %q", st.code, len(body), in)
		}
	})
}
