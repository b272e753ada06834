package sasl

import "github.com/xdg-go/pbkdf2"

func pbkdf2Key(mech, pass string, salt []byte, iters int) []byte {
	nh := newHash(mech)
	return pbkdf2.Key([]byte(pass), salt, iters, nh().Size(), nh)
}
