// Placeholder translation unit: the grove_graphs layer has no code yet (see the README's layer
// map). It exists so that the library target, and with it the layer order, is fixed.
namespace grove::graphs_layer {
int layer_version();
int layer_version() { return 0; }
}  // namespace grove::graphs_layer
