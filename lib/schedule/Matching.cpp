//===- Matching.cpp - Pairing of transfers --------------------------------===//

#include "Matching.h"

#include <deque>
#include <map>
#include <tuple>

namespace dpc::schedule::detail {

TransferPairs pairTransfers(const Schedule &s) {
  TransferPairs pairs;
  pairs.partner.resize(s.programs.size());
  pairs.startOf.resize(s.programs.size());
  // (sender, receiver, tag) -> Start indices in stream order.
  std::map<std::tuple<int, int, int>, std::vector<int>> sends, recvs;
  for (size_t r = 0; r < s.programs.size(); ++r) {
    const auto &program = s.programs[r];
    pairs.partner[r].assign(program.size(), -1);
    pairs.startOf[r].assign(program.size(), -1);
    std::map<std::tuple<bool, int, int>, std::deque<int>> open;
    int rank = static_cast<int>(r);
    for (int i = 0; i < static_cast<int>(program.size()); ++i) {
      const Instruction &inst = program[i];
      switch (inst.op) {
      case Op::SendStart:
        sends[{rank, inst.peer, inst.tag}].push_back(i);
        open[{true, inst.peer, inst.tag}].push_back(i);
        break;
      case Op::RecvStart:
        recvs[{inst.peer, rank, inst.tag}].push_back(i);
        open[{false, inst.peer, inst.tag}].push_back(i);
        break;
      case Op::SendFinish:
      case Op::RecvFinish: {
        auto it = open.find({inst.op == Op::SendFinish, inst.peer, inst.tag});
        if (it != open.end() && !it->second.empty()) {
          pairs.startOf[r][i] = it->second.front();
          it->second.pop_front();
        }
        break;
      }
      default:
        break;
      }
    }
  }
  for (const auto &[key, list] : sends) {
    auto it = recvs.find(key);
    if (it == recvs.end())
      continue;
    auto [from, to, tag] = key;
    (void)tag;
    for (size_t k = 0; k < list.size() && k < it->second.size(); ++k) {
      pairs.partner[from][list[k]] = it->second[k];
      pairs.partner[to][it->second[k]] = list[k];
    }
  }
  return pairs;
}

} // namespace dpc::schedule::detail
