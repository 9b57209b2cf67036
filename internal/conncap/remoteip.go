package conncap

import "net"

// RemoteIP is the address a connection from addr counts under: its IP in
// canonical form, without the port (and without an IPv6 zone: the same
// host). An IPv4 address mapped into IPv6 counts as the IPv4 address, so a
// host is one client whichever way its socket reports it. An address that
// is not TCP counts under its host part, or whole when it has none.
func RemoteIP(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok && a.IP != nil {
		return a.IP.String()
	}
	s := addr.String()
	if host, _, err := net.SplitHostPort(s); err == nil {
		if ip := net.ParseIP(host); ip != nil {
			return ip.String()
		}
		return host
	}
	return s
}
