// A host program built against the installed plumb package (see CMakeLists.txt beside it).
#include <cstdio>
#include <filesystem>

#include "plumb/plugin/error.hpp"
#include "plumb/plugin/text_io.hpp"

int main(int argc, char** argv) {
    std::filesystem::path dir = argc > 1 ? argv[1] : "plumb_host_data";
    std::filesystem::create_directories(dir);
    plumb::AtomicFile f(dir / "hello.txt");
    f.write("hello\n");
    f.commit();
    std::printf("ok\n");
    return 0;
}
