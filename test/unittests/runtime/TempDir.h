// A scratch directory for a test, removed at its end.

#ifndef DPC_TEST_UNITTESTS_RUNTIME_TEMPDIR_H
#define DPC_TEST_UNITTESTS_RUNTIME_TEMPDIR_H

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace dpc::test {

class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/dpc-data-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string &name) const { return path + "/" + name; }
  std::string path;
};

} // namespace dpc::test

#endif // DPC_TEST_UNITTESTS_RUNTIME_TEMPDIR_H
