/* GPUWARD_URL and its token (see remote.h). */
#include "cli/remote.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "core/token.h"

#define DEFAULT_PORT "8470"
#define TOKEN_FILE_MAX 4096

static int fail(char *why, size_t n, const char *msg) {
        if (why && n)
                snprintf(why, n, "%s", msg);
        return -EINVAL;
}

/* HOST[:PORT] of a URL, hp[0..n): the host into ret (brackets dropped), the port checked. */
static int parse_hostport(const char *hp, size_t n, struct cli_remote *ret, char *why, size_t why_size) {
        const char *host = hp, *colon;
        size_t hlen;
        if (n > 0 && hp[0] == '[') {
                const char *close = memchr(hp, ']', n);
                if (!close)
                        return fail(why, why_size, "an IPv6 address goes in brackets: http://[::1]:8470");
                host = hp + 1;
                hlen = (size_t) (close - host);
                colon = close + 1 < hp + n ? close + 1 : NULL;
                if (colon && *colon != ':')
                        return fail(why, why_size, "after ']' only ':PORT' may follow");
        } else {
                colon = memchr(hp, ':', n);
                hlen = colon ? (size_t) (colon - hp) : n;
        }
        if (hlen == 0 || hlen > CLI_URL_HOST_MAX)
                return fail(why, why_size, "no host (http://HOST:PORT)");
        for (size_t i = 0; i < hlen; i++)
                if (!isalnum((unsigned char) host[i]) && !strchr(".-_:", host[i]))
                        return fail(why, why_size, "the host has a character a host name cannot have");
        memcpy(ret->host, host, hlen);
        ret->host[hlen] = '\0';
        snprintf(ret->port, sizeof ret->port, "%s", DEFAULT_PORT);
        if (colon) {
                char port[8];
                size_t plen = n - (size_t) (colon + 1 - hp);
                long long v;
                if (plen == 0 || plen >= sizeof port)
                        return fail(why, why_size, "the port must be 1-65535");
                memcpy(port, colon + 1, plen);
                port[plen] = '\0';
                if (strspn(port, "0123456789") != plen || gw_parse_int(port, 1, 65535, &v) < 0)
                        return fail(why, why_size, "the port must be 1-65535");
                snprintf(ret->port, sizeof ret->port, "%lld", v);
        }
        memcpy(ret->hostport, hp, n);
        ret->hostport[n] = '\0';
        return 0;
}

int cli_url_parse(const char *url, struct cli_remote *ret, char *why, size_t why_size) {
        static const char http[] = "http://", https[] = "https://";
        if (!url || strlen(url) >= sizeof ret->url)
                return fail(why, why_size, "empty, or longer than 511 bytes");
        if (!strncasecmp(url, https, strlen(https))) {
                (void) fail(why, why_size,
                            "https is not supported by this build (the gpuward command has no "
                            "TLS library); put a TLS proxy or tunnel in front and point GPUWARD_URL "
                            "at its http end on this host");
                return -EPROTONOSUPPORT;
        }
        if (strncasecmp(url, http, strlen(http)))
                return fail(why, why_size, "must start with http:// (http://HOST:PORT)");
        const char *hp = url + strlen(http);
        size_t n = strcspn(hp, "/");
        /* Only the daemon's root: the API's paths are gpuward's to choose. */
        if (hp[n] && strcmp(hp + n, "/"))
                return fail(why, why_size, "no path after HOST:PORT (the API's paths are gpuward's)");
        if (n >= sizeof ret->hostport)
                return fail(why, why_size, "the host is too long");
        int r = parse_hostport(hp, n, ret, why, why_size);
        if (r < 0)
                return r;
        snprintf(ret->url, sizeof ret->url, "%s", url);
        return 0;
}

int cli_remote_set_token(struct cli_remote *ret, const char *text) {
        while (isspace((unsigned char) *text))
                text++;
        size_t n = strlen(text);
        while (n > 0 && isspace((unsigned char) text[n - 1]))
                n--;
        if (n != GW_TOKEN_LEN)
                return -EINVAL;
        char tok[GW_TOKEN_SIZE];
        memcpy(tok, text, n);
        tok[n] = '\0';
        bool ok = gw_token_is_wellformed(tok);
        if (ok)
                memcpy(ret->token, tok, n + 1);
        memset(tok, 0, sizeof tok);
        return ok ? 0 : -EINVAL;
}

int cli_remote_token_file(struct cli_remote *ret, const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        char buf[TOKEN_FILE_MAX + 1];
        size_t len = 0;
        for (;;) {
                ssize_t k = read(fd, buf + len, sizeof buf - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0 || (len += (size_t) k) == sizeof buf - 1)
                        break;
        }
        buf[len] = '\0';
        int r = cli_remote_set_token(ret, buf);
        memset(buf, 0, sizeof buf);
        return r;
}

bool cli_host_is_loopback_literal(const char *host) {
        struct in_addr a4;
        struct in6_addr a6;
        if (!strcasecmp(host, "localhost"))
                return true;
        if (inet_pton(AF_INET, host, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) == 127;
        if (inet_pton(AF_INET6, host, &a6) == 1)
                return IN6_IS_ADDR_LOOPBACK(&a6);
        return false;
}
