#include "launcher/agent_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "format/params_table.h"

namespace ncclrec::launcher {

double monoS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void say(const std::string& line) {
  const std::string s = line + "\n";
  (void)!write(STDERR_FILENO, s.data(), s.size());
}

int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

bool isLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0;
}

double dumpWaitSeconds() {
  const std::string v = format::paramValue("NCCLREC_DUMP_WAIT");
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(d >= 0)) {
    say("cxxrun: NCCLREC_DUMP_WAIT='" + v + "' is not a number of seconds; using 10");
    return 10;
  }
  return d;
}

}  // namespace ncclrec::launcher
