package tablecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// The stream layout: "AGS1", the plaintext block size (uint32 LE), then
// the blocks, each nonce (12) ‖ ciphertext ‖ tag (16). Every block but
// the last holds blockSize plaintext bytes; the last holds the rest
// (possibly none). A block's associated data is "AGS1" ‖ index (uint32
// LE) ‖ 1 for the last block, 0 for the others.
const (
	magic      = "AGS1"
	headerSize = 8
	blockSize  = 1 << 20
	nonceSize  = 12
	tagSize    = 16
	overhead   = nonceSize + tagSize
)

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func blockAAD(index int64, last bool) []byte {
	aad := make([]byte, 9)
	copy(aad, magic)
	binary.LittleEndian.PutUint32(aad[4:], uint32(index))
	if last {
		aad[8] = 1
	}
	return aad
}

// plainSize is the plaintext size of a stream of size bytes with
// plaintext blocks of bs bytes, and its number of blocks.
func plainSize(size, bs int64) (plain, blocks int64, err error) {
	body := size - headerSize
	if body < overhead {
		return 0, 0, fmt.Errorf("%w: too short", ErrDamaged)
	}
	full := body / (bs + overhead)
	rest := body % (bs + overhead)
	switch {
	case rest == 0:
		return full * bs, full, nil
	case rest < overhead:
		return 0, 0, fmt.Errorf("%w: truncated block", ErrDamaged)
	}
	return full*bs + rest - overhead, full + 1, nil
}

// writer encrypts into w; it holds back one block so that Close can mark
// the last one.
type writer struct {
	w     io.WriteCloser
	aead  cipher.AEAD
	buf   []byte
	index int64
	err   error
}

func newWriter(w io.WriteCloser, key []byte) (*writer, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, headerSize)
	copy(hdr, magic)
	binary.LittleEndian.PutUint32(hdr[4:], blockSize)
	if _, err := w.Write(hdr); err != nil {
		return nil, err
	}
	return &writer{w: w, aead: aead, buf: make([]byte, 0, blockSize)}, nil
}

func (e *writer) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n := 0
	for len(p) > 0 {
		if len(e.buf) == blockSize {
			if e.err = e.seal(false); e.err != nil {
				return n, e.err
			}
		}
		k := copy(e.buf[len(e.buf):blockSize], p)
		e.buf = e.buf[:len(e.buf)+k]
		p, n = p[k:], n+k
	}
	return n, nil
}

func (e *writer) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{e}, r)
}

func (e *writer) seal(last bool) error {
	out := make([]byte, nonceSize, nonceSize+len(e.buf)+tagSize)
	if _, err := rand.Read(out); err != nil {
		return err
	}
	out = e.aead.Seal(out, out[:nonceSize], e.buf, blockAAD(e.index, last))
	e.index++
	e.buf = e.buf[:0]
	_, err := e.w.Write(out)
	return err
}

func (e *writer) Close() error {
	err := e.err
	if err == nil {
		err = e.seal(true)
		e.err = errors.New("tablecrypt: write after close")
	}
	if cerr := e.w.Close(); err == nil {
		err = cerr
	}
	return err
}

// sealAll encrypts p whole.
func sealAll(key, p []byte) ([]byte, error) {
	var out buffer
	w, err := newWriter(&out, key)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(p); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.b, nil
}

type buffer struct{ b []byte }

func (b *buffer) Write(p []byte) (int, error) { b.b = append(b.b, p...); return len(p), nil }
func (b *buffer) Close() error                { return nil }

// reader decrypts a stream read with ReadAt, keeping the last block it
// opened.
type reader struct {
	f interface {
		io.ReaderAt
		io.Closer
		Stat() (fs.FileInfo, error)
	}
	name   string
	aead   cipher.AEAD
	bs     int64
	size   int64 // plaintext
	blocks int64
	off    int64 // Read/Seek position
	cur    int64 // index of plain, -1 none
	plain  []byte
}

func newReader(f interface {
	io.ReaderAt
	io.Closer
	Stat() (fs.FileInfo, error)
}, name string, key []byte) (*reader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, headerSize)
	if _, err := f.ReadAt(hdr, 0); err != nil || string(hdr[:4]) != magic {
		return nil, fmt.Errorf("%w: %s is not an encrypted file of this table", ErrDamaged, name)
	}
	bs := int64(binary.LittleEndian.Uint32(hdr[4:]))
	if bs == 0 || bs > 64<<20 {
		return nil, fmt.Errorf("%w: %s: bad block size", ErrDamaged, name)
	}
	size, blocks, err := plainSize(st.Size(), bs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &reader{f: f, name: name, aead: aead, bs: bs, size: size, blocks: blocks, cur: -1}, nil
}

// block opens block i.
func (r *reader) block(i int64) ([]byte, error) {
	if i == r.cur {
		return r.plain, nil
	}
	n := r.bs
	if i == r.blocks-1 {
		n = r.size - i*r.bs
	}
	enc := make([]byte, n+overhead)
	if _, err := r.f.ReadAt(enc, headerSize+i*(r.bs+overhead)); err != nil {
		return nil, err
	}
	plain, err := r.aead.Open(r.plain[:0], enc[:nonceSize], enc[nonceSize:], blockAAD(i, i == r.blocks-1))
	if err != nil {
		r.cur = -1
		return nil, fmt.Errorf("%w: %s, block %d", ErrDamaged, r.name, i)
	}
	r.cur, r.plain = i, plain
	return plain, nil
}

func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fs.ErrInvalid
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= r.size {
			return n, io.EOF
		}
		b, err := r.block(pos / r.bs)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], b[pos%r.bs:])
	}
	return n, nil
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (r *reader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, fs.ErrInvalid
	}
	if offset < 0 {
		return 0, fs.ErrInvalid
	}
	r.off = offset
	return offset, nil
}

func (r *reader) Close() error { return r.f.Close() }

// Stat reports the plaintext size.
func (r *reader) Stat() (fs.FileInfo, error) {
	st, err := r.f.Stat()
	if err != nil {
		return nil, err
	}
	return plainInfo{st, r.size}, nil
}

type plainInfo struct {
	fs.FileInfo
	size int64
}

func (i plainInfo) Size() int64        { return i.size }
func (i plainInfo) ModTime() time.Time { return i.FileInfo.ModTime() }
