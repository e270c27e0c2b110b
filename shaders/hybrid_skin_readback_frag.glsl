/* Readback fragment shader: writes the value the vertex computed, untouched (RGBA32F target). */

void main()
{
  FragColor = readback_value;
}
