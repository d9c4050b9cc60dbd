// make_model; see zoo.h.
#include "models/zoo/zoo.h"

#include "core/error.h"

namespace grove::zoo {

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "mlp") return std::make_shared<Mlp>();
  if (name == "cnn") return std::make_shared<Cnn>();
  if (name == "gpt") return std::make_shared<Gpt>();
  GROVE_CHECK(false, "make_model: expected one of the models \"mlp\", \"cnn\" or \"gpt\", got \"",
              name, "\"");
  return nullptr;
}

}  // namespace grove::zoo
