/*
 * host_port.h - "127.0.0.1:514", "[::1]:514" or "*:514" as a socket
 * address: how the syslog input and the HTTP endpoint take theirs.
 */
#ifndef LUMBERJIT_HOST_PORT_H
#define LUMBERJIT_HOST_PORT_H

#include <sys/socket.h>

/* Fills sa from s; NULL, or why it cannot ("the port must be ...", to
 * follow "'S': " in a message). */
const char *host_port_parse(const char *s, struct sockaddr_storage *sa);

#endif
