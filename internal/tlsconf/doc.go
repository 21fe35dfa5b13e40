// Package tlsconf makes the TLS configurations of icefloe's listeners and
// clients: a server certificate read from files and read again when they
// change (so a renewed certificate is served without a restart), the root
// CAs clients verify servers against, and a development mode that makes a
// throwaway CA and a server certificate in a directory.
package tlsconf
