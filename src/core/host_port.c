/* host_port.c - see host_port.h. */
#include "host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

const char *host_port_parse(const char *s, struct sockaddr_storage *sa)
{
  char host[INET6_ADDRSTRLEN + 2];
  const char *colon = strrchr(s, ':');
  size_t hostlen = colon ? (size_t)(colon - s) : 0;
  char *end;
  unsigned long port;

  if (!colon || hostlen == 0 || hostlen >= sizeof host)
    return "it is no HOST:PORT";
  port = strtoul(colon + 1, &end, 10);
  if (!colon[1] || *end || port > 65535)
    return "the port must be a number from 0 to 65535";
  memcpy(host, s, hostlen);
  host[hostlen] = '\0';
  memset(sa, 0, sizeof *sa);
  if (host[0] == '[' && host[hostlen - 1] == ']') {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
    host[hostlen - 1] = '\0';
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1) return NULL;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (strcmp(host, "*") == 0) return NULL; /* INADDR_ANY */
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) return NULL;
  }
  return "the host must be an IPv4 address, [IPv6] or *";
}
