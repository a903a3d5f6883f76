package members

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// peerSecretKey is the key of the peer secret in its Secret.
const peerSecretKey = "secret"

// minSecretLen: shorter secrets are refused.
const minSecretLen = 16

// peerSecret returns the secret the agents authenticate each other with:
// the file's content when l2-announcements-peer-secret-file is set, else
// the key "secret" of the Secret l2-announcements-peer-secret in the
// agents' namespace, which the first agent to need it creates with 32
// random bytes (as MetalLB's controller does for its memberlist secret).
// Creating races between agents are settled by the API server: the losers
// read the winner's.
func (c Config) peerSecret(ctx context.Context, kube kubernetes.Interface, ns string) ([]byte, error) {
	if c.L2AnnouncementsPeerSecretFile != "" {
		b, err := os.ReadFile(c.L2AnnouncementsPeerSecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading the peer secret: %w", err)
		}
		if len(strings.TrimSpace(string(b))) < minSecretLen {
			return nil, fmt.Errorf("the peer secret in %s is shorter than %d characters", c.L2AnnouncementsPeerSecretFile, minSecretLen)
		}
		return b, nil
	}
	secrets := kube.CoreV1().Secrets(ns)
	for range 3 {
		s, err := secrets.Get(ctx, c.L2AnnouncementsPeerSecret, metav1.GetOptions{})
		switch {
		case err == nil:
			v := s.Data[peerSecretKey]
			if len(v) < minSecretLen {
				return nil, fmt.Errorf("Secret %s/%s: key %q missing or shorter than %d bytes", ns, c.L2AnnouncementsPeerSecret, peerSecretKey, minSecretLen)
			}
			return v, nil
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, c.L2AnnouncementsPeerSecret, err)
		}
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: c.L2AnnouncementsPeerSecret,
				Labels: map[string]string{"app.kubernetes.io/part-of": "herald"}},
			Data: map[string][]byte{peerSecretKey: []byte(hex.EncodeToString(raw))},
		}
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating Secret %s/%s: %w", ns, c.L2AnnouncementsPeerSecret, err)
		}
		// Created, by this agent or another: read what won.
	}
	return nil, errors.New("the peer Secret keeps vanishing")
}
