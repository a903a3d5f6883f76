package readiness

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// wrongURLHint ends the outcome of an answer that no API server's
// /readyz gives: the URL is likely wrong.
const wrongURLHint = ": is readyz-url the API server's /readyz?"

// certHint ends the outcome of a probe whose TLS verification failed
// (only with readyz-ca-file): the URL's host is not one the serving
// certificate names, or the file is not the CA that signed it. Neither
// mends itself when the API server restarts.
const certHint = ": is readyz-url's host named by the API server's certificate, and readyz-ca-file its CA?"

// wrongStatus: answers no kube-apiserver's /readyz gives. 400 is what an
// HTTPS server answers a plain HTTP request (an http:// readyz-url); 403
// is judged apart (prober.forbidden).
func wrongStatus(code int) bool {
	switch code {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusUnauthorized:
		return true
	}
	return false
}

// errorHint is the hint for a probe that got no answer because of the
// settings, not because the API server is down: "" for the others
// (refused, timed out), which a starting API server gives too.
func errorHint(err error) string {
	var cert *tls.CertificateVerificationError
	var dns *net.DNSError
	switch {
	case errors.As(err, &cert):
		return certHint
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return wrongURLHint
	case errors.As(err, &dns) && dns.IsNotFound:
		// A name that does not resolve does not start resolving when
		// the API server does.
		return wrongURLHint
	}
	return ""
}

// hinted: the outcome says that the settings are wrong.
func hinted(outcome string) bool {
	return strings.HasSuffix(outcome, wrongURLHint) || strings.HasSuffix(outcome, certHint)
}

// forbiddenGrace: how long 403s in a row count as an API server that is
// starting, before they count as a wrong readyz-url.
const forbiddenGrace = 30 * time.Second

// unansweredGrace: how long the probes may get no answer at all before
// it is logged at warning level: longer than a kube-apiserver takes to
// start with its etcd, short enough to point at a wrong readyz-url while
// the operator is still looking.
const unansweredGrace = 60 * time.Second
