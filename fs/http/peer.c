// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * peer.c - a loopback client's uid from /proc/net/tcp{,6}.
 *
 * The kernel prints an IPv4 address as the %08X of its 32-bit word in
 * memory (network order read as a host integer: 127.0.0.1 is 0100007F
 * here) and an IPv6 address as four such words; ports as %04X of the
 * port number. A client may reach an IPv6 listener from an IPv4 socket
 * (the daemon then sees ::ffff:127.0.0.1) or the other way round, so
 * both spellings are looked for in both files.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "fs/http/peer.h"

/* A socket address as /proc/net prints it: "ADDR:PORT", v4 or v6. */
struct spelling {
	char v4[16];		/* "" when it has no IPv4 form */
	char v6[40];
};

static bool mapped_v4(const struct in6_addr *a)
{
	return IN6_IS_ADDR_V4MAPPED(a);
}

static void spell(const struct sockaddr_storage *sa, struct spelling *s)
{
	uint32_t w[4];
	unsigned port;

	memset(s, 0, sizeof(*s));
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		port = ntohs(in->sin_port);
		snprintf(s->v4, sizeof(s->v4), "%08X:%04X",
			 (unsigned)in->sin_addr.s_addr, port);
		/* the same address from an IPv6 socket: ::ffff:a.b.c.d */
		w[0] = w[1] = 0;
		w[2] = htonl(0xffff);
		w[3] = in->sin_addr.s_addr;
	} else {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		port = ntohs(in6->sin6_port);
		memcpy(w, &in6->sin6_addr, sizeof(w));
		if (mapped_v4(&in6->sin6_addr))
			snprintf(s->v4, sizeof(s->v4), "%08X:%04X",
				 (unsigned)w[3], port);
	}
	snprintf(s->v6, sizeof(s->v6), "%08X%08X%08X%08X:%04X",
		 (unsigned)w[0], (unsigned)w[1], (unsigned)w[2],
		 (unsigned)w[3], port);
}

bool peer_is_loopback(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (sa->ss_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (mapped_v4(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* The owner of the socket local_s -> remote_s in one /proc/net file. */
static int find_in(const char *file, const char *local_s,
		   const char *remote_s, uid_t *uid)
{
	char line[512], loc[64], rem[64];
	unsigned u;
	FILE *f;
	int ret = -ENOENT;

	if (!local_s[0])
		return -ENOENT;
	f = fopen(file, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT : -errno;
	while (ret && fgets(line, sizeof(line), f))
		if (sscanf(line, " %*s %63s %63s %*s %*s %*s %*s %u", loc, rem,
			   &u) == 3 && !strcmp(loc, local_s) &&
		    !strcmp(rem, remote_s)) {
			*uid = u;
			ret = 0;
		}
	fclose(f);
	return ret;
}

int peer_uid(const struct sockaddr_storage *local,
	     const struct sockaddr_storage *peer, uid_t *uid)
{
	struct spelling us, them;
	int ret;

	if ((local->ss_family != AF_INET && local->ss_family != AF_INET6) ||
	    local->ss_family != peer->ss_family)
		return -EAFNOSUPPORT;
	spell(local, &us);
	spell(peer, &them);
	/* The client's socket: its local address is our peer. */
	ret = find_in("/proc/net/tcp", them.v4, us.v4, uid);
	if (ret == -ENOENT)
		ret = find_in("/proc/net/tcp6", them.v6, us.v6, uid);
	return ret;
}

void peer_str(const struct sockaddr_storage *sa, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(in->sin_port));
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, size, "?");
	}
}
