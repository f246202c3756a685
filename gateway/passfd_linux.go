package gateway

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The relay hands the gateway each client connection itself: the socket,
// over the unix socket they share (SCM_RIGHTS), not its bytes. The gateway
// then carries bytes between the client's socket and the server's with one
// splice, as any proxy would, and the relay is out of the way: a proxy
// client in the sandbox costs no more than one reaching the gateway over a
// network. A socket keeps the network namespace it was made in, so the
// gateway's end of it is still the sandbox's loopback.

//
// Under gVisor the sandbox's sockets are its own kernel's, not the host's:
// one cannot be sent to the gateway (sendmsg fails, sending nothing). The
// relay then sends passStream instead and carries the connection's bytes
// over the unix socket itself (errNoPass).

// The first byte on the unix socket: a socket comes with it, or the
// client's bytes follow it.
const (
	passFD     = 'F'
	passStream = 'S'
)

// sendConn sends c's socket over u, with one byte.
func sendConn(u *net.UnixConn, c *net.TCPConn) error {
	f, err := c.File()
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = u.WriteMsgUnix([]byte{passFD}, unix.UnixRights(int(f.Fd())), nil)
	return err
}

// errNoPass says err is a kernel's refusal to pass a socket (gVisor's), not
// a gateway that is gone: the relay carries the bytes from then on.
func errNoPass(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)
}

// recvConn receives a socket sent by sendConn, and checks that it is a
// connected TCP socket: whatever else could come (a file, a listening
// socket, a unix socket back to the gateway) is closed and refused. When
// the relay carries the bytes instead (passStream), the client's
// connection is u itself.
func recvConn(u *net.UnixConn) (net.Conn, error) {
	oob := make([]byte, unix.CmsgSpace(4*4))
	buf := make([]byte, 1)
	n, oobn, flags, _, err := u.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	if n == 1 && buf[0] == passStream && oobn == 0 {
		return u, nil
	}
	if flags&unix.MSG_CTRUNC != 0 || perr != nil || n != 1 || buf[0] != passFD || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, errors.New("the relay sent no connection")
	}
	fd := fds[0]
	if err := checkTCPSocket(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "client")
	defer f.Close() // FileConn dups it
	return net.FileConn(f)
}

func checkTCPSocket(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return errors.New("the relay sent something other than a socket")
	}
	typ, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	dom, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	listening, err3 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if typ != unix.SOCK_STREAM || (dom != unix.AF_INET && dom != unix.AF_INET6) || listening != 0 {
		return fmt.Errorf("the relay sent a socket of type %d, domain %d, listening %d: not a TCP connection", typ, dom, listening)
	}
	return nil
}
